// routing: bgp, planned purely: RFC 7938 ASNs, sessions on every switch-to-switch /31, the FIB
// each router must converge to (the static plan's, minus what BGP's AS-path loop check never
// learns), FRR's configuration with dilated timers, and the plan that starts it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "fake_lab.h"
#include "plan/frr.h"
#include "plan/plan.h"
#include "scenario/loader.h"

namespace fabemu {
namespace {

const std::string kLeafSpine =
    "name: ls\ntopology: {kind: leaf-spine, leaves: 4, spines: 2, hosts_per_leaf: 2}\n"
    "fabric: {routing: bgp}\n";
const std::string kFatTree = "name: ft\ntopology: {kind: fat-tree, k: 4}\nfabric: {routing: bgp}\n";

LabModel model(const std::string& yaml) {
  auto m = build_model(unit::load(yaml), 0);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().what());
  return m.ok() ? std::move(*m) : LabModel{};
}

uint32_t asn_of(const LabModel& m, const std::string& name) {
  const BgpRouter* r = bgp_router(m, m.topo.find(name));
  return r ? r->asn : 0;
}

TEST(BgpPlan, LeafSpineSpinesShareAnAsnAndEveryLeafHasItsOwn) {
  const LabModel m = model(kLeafSpine);
  ASSERT_EQ(m.bgp.size(), 6u);
  EXPECT_EQ(asn_of(m, "spine1"), 64512u);
  EXPECT_EQ(asn_of(m, "spine2"), 64512u);
  std::set<uint32_t> leaves;
  for (const char* l : {"leaf1", "leaf2", "leaf3", "leaf4"}) leaves.insert(asn_of(m, l));
  EXPECT_EQ(leaves, (std::set<uint32_t>{64513, 64514, 64515, 64516}));
  const BgpRouter& leaf1 = *bgp_router(m, m.topo.find("leaf1"));
  ASSERT_EQ(leaf1.neighbors.size(), 2u);
  for (const BgpNeighbor& n : leaf1.neighbors) EXPECT_EQ(n.asn, 64512u);
  // A leaf announces its hosts' block and its loopback.
  ASSERT_EQ(leaf1.networks.size(), 2u);
  EXPECT_EQ(leaf1.networks[0], *m.addresses.edge_block[leaf1.node]);
  EXPECT_EQ(leaf1.networks[1].len, 32);
  // leaf1 learns every other leaf's block and loopback over both spines, and both spines'
  // loopbacks directly: 3 x 2 + 2.
  EXPECT_EQ(leaf1.fib.size(), 8u);
  for (const Route& r : leaf1.fib)
    if (r.dst.len < 32) {
      EXPECT_EQ(r.nexthops.size(), 2u) << r.dst.str();
    }
  // A spine never learns the other spine's loopback: its path holds the spines' ASN.
  const BgpRouter& spine1 = *bgp_router(m, m.topo.find("spine1"));
  const Prefix other{*m.addresses.loopback[m.topo.find("spine2")], 32};
  EXPECT_TRUE(std::none_of(spine1.fib.begin(), spine1.fib.end(),
                           [&](const Route& r) { return r.dst == other; }));
  EXPECT_EQ(spine1.fib.size(), 8u);  // 4 leaves x (block, loopback)
}

TEST(BgpPlan, FatTreeCoresShareOneAsnAggregationsOnePerPodEdgesTheirOwn) {
  const LabModel m = model(kFatTree);
  ASSERT_EQ(m.bgp.size(), 20u);
  std::set<uint32_t> cores, edges;
  for (int i = 1; i <= 4; ++i) cores.insert(asn_of(m, "core" + std::to_string(i)));
  EXPECT_EQ(cores, std::set<uint32_t>{64512});
  for (int pod = 0; pod < 4; ++pod)
    EXPECT_EQ(asn_of(m, "agg" + std::to_string(2 * pod + 1)),
              asn_of(m, "agg" + std::to_string(2 * pod + 2)));
  std::set<uint32_t> pods;
  for (int a = 1; a <= 8; a += 2) pods.insert(asn_of(m, "agg" + std::to_string(a)));
  EXPECT_EQ(pods.size(), 4u);
  for (int e = 1; e <= 8; ++e) edges.insert(asn_of(m, "edge" + std::to_string(e)));
  EXPECT_EQ(edges.size(), 8u);
  // Every router learns every edge's host block over all its shortest paths, exactly as the
  // static plan routes it.
  auto statics = plan_routes(m.topo, m.addresses, {}, /*summarize=*/false);
  ASSERT_TRUE(statics.ok());
  for (const BgpRouter& r : m.bgp)
    for (const Route& s : (*statics)[r.node]) {
      if (s.dst.len == 32) continue;
      auto it =
          std::find_if(r.fib.begin(), r.fib.end(), [&](const Route& f) { return f.dst == s.dst; });
      ASSERT_NE(it, r.fib.end()) << m.topo.nodes[r.node].name << " " << s.dst.str();
      EXPECT_EQ(it->nexthops, s.nexthops) << m.topo.nodes[r.node].name << " " << s.dst.str();
    }
}

TEST(BgpPlan, SwitchesGetNoStaticRoutesToOtherSwitchesButStartFrrAndWaitForIt) {
  auto a = unit::apply_fake(kLeafSpine);
  ASSERT_TRUE(a);
  int started = 0, awaited = 0;
  for (const Action& act : a->plan.actions) {
    if (const auto* r = std::get_if<AddRoute>(&act)) {
      EXPECT_NE(r->ns.find("-t-h"), std::string::npos)  // hosts are h1..h8
          << "a static route on a switch: " << describe(act);
    }
    if (const auto* s = std::get_if<StartRouter>(&act)) {
      ++started;
      EXPECT_EQ(s->daemons, (std::vector<std::string>{"zebra", "bfdd", "bgpd"}));
    }
    if (const auto* w = std::get_if<AwaitRoutes>(&act)) {
      ++awaited;
      EXPECT_FALSE(w->routes.empty()) << w->node;
    }
  }
  EXPECT_EQ(started, 6);
  EXPECT_EQ(awaited, 6);
  EXPECT_EQ(a->fake.routers.size(), 6u);
}

TEST(FrrConfig, SessionsBfdAndNetworksAsPlannedTimersDilated) {
  LabModel m = model(kLeafSpine);
  const BgpRouter& leaf1 = *bgp_router(m, m.topo.find("leaf1"));
  std::map<std::string, std::string> files;
  for (const FrrConfig& c : frr_configs(m, leaf1, frr_timers(m))) files[c.file] = c.text;
  ASSERT_TRUE(files.count("zebra.conf") && files.count("bfdd.conf") && files.count("bgpd.conf"));
  const std::string& bgp = files["bgpd.conf"];
  EXPECT_NE(bgp.find("router bgp 64513\n"), std::string::npos) << bgp;
  EXPECT_NE(bgp.find("timers bgp 3 9\n"), std::string::npos) << bgp;
  for (const BgpNeighbor& n : leaf1.neighbors) {
    EXPECT_NE(bgp.find("neighbor " + n.address.str() + " remote-as 64512\n"), std::string::npos);
    EXPECT_NE(bgp.find("neighbor " + n.address.str() + " bfd profile fabemu\n"), std::string::npos);
  }
  for (const Prefix& p : leaf1.networks)
    EXPECT_NE(bgp.find("  network " + p.str() + "\n"), std::string::npos) << bgp;
  EXPECT_NE(bgp.find("maximum-paths 64"), std::string::npos);
  EXPECT_NE(files["bfdd.conf"].find("transmit-interval 100\n"), std::string::npos);
  EXPECT_NE(files["bfdd.conf"].find("detect-multiplier 3\n"), std::string::npos);

  // x10: BGP's and BFD's timers ten times longer on the wall clock.
  m.time_scale.factor = 10;
  const FrrTimers t = frr_timers(m);
  EXPECT_EQ(t.keepalive_s, 30u);
  EXPECT_EQ(t.hold_s, 90u);
  EXPECT_EQ(t.bfd_interval_ms, 1000u);
  EXPECT_TRUE(frr_timers_fit(m).ok());
  m.time_scale.factor = 1000;  // 100 s between BFD packets: more than bfdd takes
  auto fit = frr_timers_fit(m);
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.error().what().find("above the 60000 ms FRR's bfdd takes"), std::string::npos)
      << fit.error().what();
  m.time_scale.factor = 0.05;  // (auto never goes below 1; only the wall interval matters)
  auto slow = frr_timers_fit(m);
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().what().find("5 ms of wall clock, below the 10 ms FRR's bfdd takes"),
            std::string::npos)
      << slow.error().what();

  // bfd: off: no bfdd, no BFD on the sessions.
  LabModel nobfd = model(
      "name: ls\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}\n"
      "fabric: {routing: bgp, bfd: off}\n");
  EXPECT_EQ(frr_daemons(nobfd), (std::vector<std::string>{"zebra", "bgpd"}));
  for (const FrrConfig& c : frr_configs(nobfd, nobfd.bgp.front(), frr_timers(nobfd)))
    EXPECT_EQ(c.text.find("bfd"), std::string::npos) << c.file << ": " << c.text;
}

TEST(BgpScenario, BfdWithoutBgpAndBgpOnOvsAreRefusedWithAPosition) {
  auto bfd = load_scenario_string(
      "name: t\ntopology: {kind: fat-tree, k: 2}\nfabric: {bfd: {interval: 50ms}}\n", "b.yaml");
  ASSERT_FALSE(bfd.ok());
  EXPECT_NE(bfd.error().what().find("b.yaml:3:15: fabric.bfd: only with routing: bgp"),
            std::string::npos)
      << bfd.error().what();
  auto ovs = load_scenario_string(
      "name: t\ntopology: {kind: fat-tree, k: 2}\nfabric: {switch: ovs, routing: bgp}\n", "o.yaml");
  ASSERT_FALSE(ovs.ok());
  EXPECT_NE(ovs.error().what().find("routing: bgp runs FRR on router switches"), std::string::npos)
      << ovs.error().what();
  auto fast = load_scenario_string(
      "name: t\ntopology: {kind: fat-tree, k: 2}\nfabric: {routing: bgp, bfd: {interval: 1ms}}\n",
      "f.yaml");
  ASSERT_FALSE(fast.ok());
  EXPECT_NE(fast.error().what().find("FRR's BFD sends every 10ms to 60s of wall clock"),
            std::string::npos)
      << fast.error().what();
  // Dilated, the interval is the real fabric's: x2000 runs hardware BFD's 1 ms every 2 s.
  auto dilated = load_scenario_string(
      "name: t\ntime_scale: 2000\ntopology: {kind: fat-tree, k: 2}\n"
      "fabric: {routing: bgp, bfd: {interval: 1ms}}\n",
      "d.yaml");
  ASSERT_TRUE(dilated.ok()) << dilated.error().what();
  auto too_fast = load_scenario_string(
      "name: t\ntime_scale: 100\ntopology: {kind: fat-tree, k: 2}\n"
      "fabric: {routing: bgp, bfd: {interval: 50us}}\n",
      "s.yaml");
  ASSERT_FALSE(too_fast.ok());
  EXPECT_NE(too_fast.error().what().find(
                "s.yaml:4:40: fabric.bfd.interval: FRR's BFD sends every 10ms to 60s of wall "
                "clock (at time_scale 100: 100us to 600ms of the real fabric)"),
            std::string::npos)
      << too_fast.error().what();
  auto good = load_scenario_string(
      "name: t\ntopology: {kind: fat-tree, k: 2}\n"
      "fabric: {routing: bgp, bfd: {interval: 300ms, multiplier: 5}}\n",
      "g.yaml");
  ASSERT_TRUE(good.ok()) << good.error().what();
  EXPECT_EQ(good->fabric.bfd, (FabricSpec::Bfd{300'000'000, 5}));
}

}  // namespace
}  // namespace fabemu
