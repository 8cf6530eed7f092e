// fabric.switch: ovs against the fake backend: every switch a bridge in one namespace, every
// host reaching every other through the bridges' flows (MAC rewrites checked at each port), ARP
// answered for every gateway, and the flow and group text ovs-ofctl is given.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fake_backend.h"
#include "fake_lab.h"
#include "plan/plan.h"
#include "scenario/loader.h"

namespace fabemu {
namespace {

using unit::Applied;

const std::string kOvs = "fabric: {switch: ovs}\n";
const std::string kLeafSpine =
    "name: ls\ntopology: {kind: leaf-spine, leaves: 4, spines: 3, hosts_per_leaf: 2}\n" + kOvs;
const std::string kFatTree4 = "name: ft\ntopology: {kind: fat-tree, k: 4}\n" + kOvs;
const std::string kRail =
    "name: rail\ntopology: {kind: rail-optimized, nodes: 3, gpus_per_node: 4, spines: 2}\n" + kOvs;
const std::string kExplicit = R"(name: ring
topology:
  kind: explicit
  nodes: [{name: s1, role: switch}, {name: s2, role: switch}, {name: s3, role: switch},
          {name: a, role: host}, {name: b, role: host}, {name: c, role: host}]
  links: [{a: s1, b: s2}, {a: s2, b: s3}, {a: s3, b: s1}, {a: a, b: s1}, {a: b, b: s2}, {a: c, b: s3}]
)" + kOvs;

// Planned with pool 3 (so MACs and addresses show it), userspace datapath unless asked.
std::unique_ptr<Applied> apply_fake(const std::string& yaml, bool kernel_datapath = false) {
  PlanOptions options;
  options.ovs = {kernel_datapath, kernel_datapath ? "" : "test"};
  return unit::apply_fake(yaml, options, 3);
}

class OvsAllPairs : public ::testing::TestWithParam<std::string> {};

TEST_P(OvsAllPairs, EveryHostReachesEveryOtherThroughTheBridgesOverEveryEcmpChoice) {
  auto a = apply_fake(GetParam());
  ASSERT_TRUE(a);
  const std::string ovs_ns = a->paths.ns_name(kOvsNamespaceNode);
  unit::expect_all_pairs_reach(*a, [&](const std::vector<std::string>& path) {
    for (size_t i = 1; i + 1 < path.size(); ++i)
      EXPECT_TRUE(path[i].starts_with(ovs_ns + "/")) << path[i] << " is not a bridge";
  });
}

INSTANTIATE_TEST_SUITE_P(Topologies, OvsAllPairs,
                         ::testing::Values(kLeafSpine, kFatTree4, kRail, kExplicit));

TEST(OvsPlan, SwitchesAreBridgesInOneNamespaceWithUniquePortNames) {
  auto a = apply_fake(kFatTree4);
  ASSERT_TRUE(a);
  const Topology& t = a->model.topo;
  // 16 hosts and the OVS namespace; no switch namespaces.
  EXPECT_EQ(a->fake.namespaces.size(), 17u);
  const std::string ovs_ns = a->paths.ns_name(kOvsNamespaceNode);
  ASSERT_TRUE(a->fake.ovs_running.count(ovs_ns));
  const auto& bridges = a->fake.ovs_bridges.at(ovs_ns);
  EXPECT_EQ(bridges.size(), t.switches().size());
  std::set<std::string> names;
  for (const OvsBridge& b : bridges)
    for (const OvsPort& p : b.ports) {
      EXPECT_LE(p.ifname.size(), 15u);
      EXPECT_TRUE(names.insert(p.ifname).second) << p.ifname;
    }
  EXPECT_TRUE(names.count("edge1-h1"));
  EXPECT_TRUE(names.count("agg1-core1"));
  // The switch ends carry their fixed MACs; switches forward without IP addresses of their own.
  const auto& port = a->fake.namespaces.at(ovs_ns).ifaces.at("edge1-h1");
  ASSERT_TRUE(port.mac);
  EXPECT_EQ(port.mac->bytes[0], 0x02);
  EXPECT_EQ(port.mac->bytes[2], 3);  // the pool
  EXPECT_TRUE(port.addrs.empty());
  EXPECT_FALSE(a->fake.namespaces.at(ovs_ns).sysctls.count("net/ipv4/ip_forward"));
}

TEST(OvsPlan, EveryHostsGatewayIsAnsweredByArpWithItsPortsMac) {
  auto a = apply_fake(kRail);
  ASSERT_TRUE(a);
  const Topology& t = a->model.topo;
  const std::string ovs_ns = a->paths.ns_name(kOvsNamespaceNode);
  const auto& ifaces = a->fake.namespaces.at(ovs_ns).ifaces;
  for (int h : t.hosts())
    for (int l : t.links_of(h)) {
      const int sw = t.links[l].peer(h).node;
      const Ipv4 gateway = a->model.addresses.address_of(t, l, sw);
      const auto& bridges = a->fake.ovs_bridges.at(ovs_ns);
      auto b = std::find_if(bridges.begin(), bridges.end(),
                            [&](const OvsBridge& x) { return x.name == t.nodes[sw].name; });
      ASSERT_NE(b, bridges.end());
      const std::string& port = t.links[l].end(sw).ifname;
      const int ofport = std::find_if(b->ports.begin(), b->ports.end(), [&](const OvsPort& p) {
                           return p.ifname == port;
                         })->ofport;
      bool answered = false;
      for (const OvsArpReply& r : b->arp)
        answered |= r.ofport == ofport && r.ip == gateway && r.mac == *ifaces.at(port).mac;
      EXPECT_TRUE(answered) << t.nodes[h].name << "'s gateway " << gateway.str();
    }
}

TEST(OvsPlan, UserspaceTurnsOffloadsOffOnBothEndsAndTheKernelDatapathDoesNot) {
  auto user = apply_fake(kLeafSpine);
  auto kernel = apply_fake(kLeafSpine, true);
  ASSERT_TRUE(user && kernel);
  auto count = [](const Plan& p, auto pred) {
    return std::count_if(p.actions.begin(), p.actions.end(), pred);
  };
  auto offloads = [](const Action& a) { return std::holds_alternative<DisableOffloads>(a); };
  EXPECT_EQ(count(user->plan, offloads), 2 * static_cast<long>(user->model.topo.links.size()));
  EXPECT_EQ(count(kernel->plan, offloads), 0);
  const auto* c = std::get_if<ConfigureOvs>(
      &*std::find_if(kernel->plan.actions.begin(), kernel->plan.actions.end(),
                     [](const Action& a) { return std::holds_alternative<ConfigureOvs>(a); }));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->datapath, "system");
  EXPECT_TRUE(user->fake.namespaces.at(user->paths.ns_name("h1")).ifaces.at("eth0").offloads_off);
}

TEST(OvsFlows, RoutesDecrementTtlRewriteMacsAndHashL4PortsPerProtocol) {
  auto a = apply_fake(kLeafSpine);
  ASSERT_TRUE(a);
  const auto& bridges = a->fake.ovs_bridges.at(a->paths.ns_name(kOvsNamespaceNode));
  auto leaf = std::find_if(bridges.begin(), bridges.end(),
                           [](const OvsBridge& b) { return b.name == "leaf1"; });
  ASSERT_NE(leaf, bridges.end());
  const auto flows = ovs_flow_lines(*leaf);
  const auto groups = ovs_group_lines(*leaf);
  auto any = [](const std::vector<std::string>& lines, const std::string& part) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(any(flows, "arp,in_port=1,arp_op=1,arp_tpa=10.67.")) << flows.front();
  EXPECT_TRUE(any(flows, ",tcp,nw_dst=0.0.0.0/0,actions=dec_ttl,group:1"));
  EXPECT_TRUE(any(flows, ",udp,nw_dst=0.0.0.0/0,actions=dec_ttl,group:2"));
  EXPECT_TRUE(any(flows, ",ip,nw_dst=0.0.0.0/0,actions=dec_ttl,group:3"));
  EXPECT_EQ(flows.back(), "priority=0,actions=drop");
  // The default route over 3 spines: 3 groups (TCP, UDP, other IP) of 3 buckets.
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_NE(groups[1].find("fields(ip_src,ip_dst,nw_proto,udp_src,udp_dst)"), std::string::npos);
  EXPECT_NE(groups[1].find("bucket=bucket_id:2,actions=set_field:"), std::string::npos);
  // A host route: one hop, Ethernet header rewritten to the host's MAC.
  const std::string h1 =
      a->model.addresses.host_address(a->model.topo, a->model.topo.find("h1")).str();
  const Mac h1_mac = port_mac(3, a->model.topo.links_of(a->model.topo.find("h1")).front(), false);
  EXPECT_TRUE(any(flows, "ip,nw_dst=" + h1 + "/32,actions=dec_ttl,set_field:"));
  EXPECT_TRUE(any(flows, "set_field:" + h1_mac.str() + "->eth_dst,output:1"));
  // Longer prefixes first: the /32 flows outrank the default route's.
  auto priority = [&](const std::string& part) {
    for (const auto& l : flows)
      if (l.find(part) != std::string::npos) return std::stoi(l.substr(9));
    return -1;
  };
  EXPECT_GT(priority("nw_dst=" + h1 + "/32"), priority("tcp,nw_dst=0.0.0.0/0"));
  // Every switch hashes with its own basis, so tiers do not polarise.
  std::set<uint64_t> bases;
  for (const OvsBridge& b : bridges) bases.insert(b.hash_basis);
  EXPECT_EQ(bases.size(), bridges.size());
}

TEST(OvsFlows, L3HashUsesOneGroupOfAddresses) {
  auto a = apply_fake(
      "name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, "
      "hosts_per_leaf: 1}\nfabric: {switch: ovs, ecmp_hash: l3}\n");
  ASSERT_TRUE(a);
  const auto& bridges = a->fake.ovs_bridges.at(a->paths.ns_name(kOvsNamespaceNode));
  auto leaf = std::find_if(bridges.begin(), bridges.end(),
                           [](const OvsBridge& b) { return b.name == "leaf1"; });
  const auto groups = ovs_group_lines(*leaf);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_NE(groups[0].find("fields(ip_src,ip_dst)"), std::string::npos);
}

TEST(OvsScenario, ReservedNodeNamesAndDatapathOutsideOvsAreRefusedWithAPosition) {
  auto s = load_scenario_string(R"(name: t
fabric: {switch: ovs}
topology:
  kind: explicit
  nodes: [{name: h1, role: host}, {name: ovs, role: switch}]
  links: [{a: h1, b: ovs}]
)",
                                "r.yaml");
  ASSERT_TRUE(s.ok());
  auto m = build_model(*s, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.error().what().starts_with("r.yaml:5:")) << m.error().what();
  EXPECT_NE(m.error().what().find("'ovs' is taken"), std::string::npos) << m.error().what();

  auto router = load_scenario_string(
      "name: t\nfabric: {ovs_datapath: kernel}\ntopology: {kind: fat-tree, k: 2}\n", "d.yaml");
  ASSERT_FALSE(router.ok());
  EXPECT_NE(router.error().what().find("d.yaml:2:24: fabric.ovs_datapath: only with switch: ovs"),
            std::string::npos)
      << router.error().what();
  auto kernel = load_scenario_string(
      "name: t\nfabric: {switch: ovs, ovs_datapath: kernel}\ntopology: {kind: fat-tree, k: 2}\n",
      "k.yaml");
  ASSERT_TRUE(kernel.ok());
  EXPECT_EQ(kernel->fabric.ovs_datapath, OvsDatapath::Kernel);
}

TEST(OvsChoiceRecord, RoundTrips) {
  for (const OvsChoice& c : {OvsChoice{true, ""}, OvsChoice{false, "no module: ENOENT"}}) {
    auto back = parse_ovs_choice(format_ovs_choice(c), "f");
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->kernel, c.kernel);
    EXPECT_EQ(back->why_userspace, c.why_userspace);
  }
  EXPECT_FALSE(parse_ovs_choice("bridge\n", "f").ok());
}

}  // namespace
}  // namespace fabemu
