// A lab across machines, each machine's part applied to a fake kernel of its own and the
// machines joined over their VXLAN tunnels: every host pair reaches, only cut links tunnel, and
// each machine builds, shapes and journals only its own nodes.
#include <gtest/gtest.h>

#include <set>

#include "fake_lab.h"

namespace fabemu {
namespace {

using unit::apply_cluster;
using unit::expect_all_pairs_reach;

std::string scenario(const std::string& topology, const std::string& sw = "router") {
  return "name: x\ntopology: " + topology + "\nfabric: {switch: " + sw +
         ", mtu: 4200}\nlinks: {default: {rate: 100gbit}}\n";
}

class AcrossMachines : public ::testing::TestWithParam<std::string> {};

TEST_P(AcrossMachines, EveryHostPairReachesOverTheTunnels) {
  for (const char* topology :
       {"{kind: leaf-spine, leaves: 4, spines: 2, hosts_per_leaf: 2}", "{kind: fat-tree, k: 4}",
        "{kind: rail-optimized, nodes: 3, gpus_per_node: 2, spines: 2, scale_up: {rate: "
        "900gbit}}"}) {
    SCOPED_TRACE(topology);
    auto a = apply_cluster(scenario(topology, GetParam()), 3);
    ASSERT_TRUE(a);
    expect_all_pairs_reach(*a);
  }
}

INSTANTIATE_TEST_SUITE_P(Switch, AcrossMachines, ::testing::Values("router", "ovs"));

TEST(AcrossMachines, EachMachineBuildsItsPartAndTunnelsOnlyCutLinks) {
  auto a = apply_cluster(scenario("{kind: fat-tree, k: 4}"), 3);
  ASSERT_TRUE(a);
  const Placement& p = a->model.part->placement;
  const Topology& t = a->model.topo;
  int tunnels = 0;
  std::set<uint32_t> vnis;
  for (int mi = 0; mi < 3; ++mi) {
    const Plan& plan = a->plans[mi];
    int mine = 0;
    for (const Action& act : plan.actions) {
      if (const auto* ns = std::get_if<CreateNamespace>(&act)) {
        EXPECT_EQ(p.machine_of[t.find(ns->hostname)], mi) << ns->ns;
      }
      if (const auto* x = std::get_if<CreateVxlan>(&act)) {
        ++tunnels;
        ++mine;
        vnis.insert(x->vni);
        EXPECT_EQ(x->local.str(), "198.18.0." + std::to_string(mi + 1));
        EXPECT_EQ(x->mtu, 4200u);
        EXPECT_EQ(x->gso_max_segs, 1u);  // a shaped port: one packet per skb
      }
      if (const auto* s = std::get_if<ShapePort>(&act)) {
        const int link = static_cast<int>((s->ifindex - kFirstPortIfindex) / 2);
        const bool b_side = (s->ifindex - kFirstPortIfindex) % 2;
        const int owner = b_side ? t.links[link].b.node : t.links[link].a.node;
        EXPECT_EQ(p.machine_of[owner], mi) << s->direction;
      }
    }
    EXPECT_EQ(plan.tunnels, mine);
  }
  // Each cut link: two tunnel ends, one VNI; every other link a veth on one machine.
  EXPECT_EQ(tunnels, 2 * static_cast<int>(p.cut_links.size()));
  EXPECT_EQ(vnis.size(), p.cut_links.size());
  int veths = 0;
  for (const Plan& plan : a->plans) veths += plan.veths;
  EXPECT_EQ(veths + static_cast<int>(p.cut_links.size()), static_cast<int>(t.links.size()));
}

TEST(AcrossMachines, TwoLabsOnTheSameMachinesUseOtherVnis) {
  EXPECT_NE(vxlan_id(0, 5), vxlan_id(1, 5));
  EXPECT_LT(vxlan_id(kMaxLabPools - 1, 65535), 1u << 24);  // VNIs are 24 bits
}

TEST(AcrossMachines, TheRunDirKeepsThePart) {
  auto a =
      apply_cluster(scenario("{kind: leaf-spine, leaves: 4, spines: 2, hosts_per_leaf: 2}"), 2);
  ASSERT_TRUE(a);
  const std::string text = format_part(*a->model.part);
  LabModel back = a->model;
  back.part.reset();
  ASSERT_TRUE(parse_part(text, "part", back));
  ASSERT_TRUE(back.part);
  EXPECT_EQ(back.part->index, 0);
  EXPECT_EQ(back.part->machines, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_EQ(back.part->underlay[1].str(), "198.18.0.2");
  EXPECT_EQ(back.part->placement.machine_of, a->model.part->placement.machine_of);
  EXPECT_FALSE(parse_part("{}", "part", back));
}

}  // namespace
}  // namespace fabemu
