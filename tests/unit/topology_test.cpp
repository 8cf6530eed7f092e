// Generators, link-shape resolution and name checks of the topology model.
#include <gtest/gtest.h>

#include <limits>

#include "fake_lab.h"
#include "model/fair_share.h"
#include "model/generators.h"
#include "model/topology.h"
#include "scenario/loader.h"

namespace fabemu {
namespace {

using unit::load;

int count_class(const Topology& t, const std::string& cls) {
  return static_cast<int>(
      std::count_if(t.links.begin(), t.links.end(), [&](const Link& l) { return l.cls == cls; }));
}

class FatTreeCounts : public ::testing::TestWithParam<int> {};

TEST_P(FatTreeCounts, MatchTheTextbook) {
  const int k = GetParam();
  Topology t = generate_fat_tree(FatTreeSpec{k});
  EXPECT_EQ(t.host_count(), k * k * k / 4);
  EXPECT_EQ(static_cast<int>(t.switches().size()), 5 * k * k / 4);
  EXPECT_EQ(count_class(t, "host-edge"), k * k * k / 4);
  EXPECT_EQ(count_class(t, "edge-agg"), k * k * k / 4);
  EXPECT_EQ(count_class(t, "agg-core"), k * k * k / 4);
  // Every switch has k ports; every host one.
  for (size_t n = 0; n < t.nodes.size(); ++n)
    EXPECT_EQ(t.links_of(n).size(), t.nodes[n].role == Role::Host ? 1u : static_cast<size_t>(k))
        << t.nodes[n].name;
}

INSTANTIATE_TEST_SUITE_P(K, FatTreeCounts, ::testing::Values(4, 6, 8));

TEST(LeafSpine, CountsAndNames) {
  Topology t = generate_leaf_spine(LeafSpineSpec{4, 2, 3});
  EXPECT_EQ(t.host_count(), 12);
  EXPECT_EQ(t.switches().size(), 6u);
  EXPECT_EQ(count_class(t, "host-leaf"), 12);
  EXPECT_EQ(count_class(t, "leaf-spine"), 8);
  EXPECT_GE(t.find("h12"), 0);
  EXPECT_GE(t.find("leaf4"), 0);
  EXPECT_GE(t.find("spine2"), 0);
  EXPECT_EQ(t.find("h13"), -1);
  // Hosts h1..h3 on leaf1, h4..h6 on leaf2: ranks follow names.
  int h4 = t.find("h4");
  EXPECT_EQ(t.nodes[h4].rank, 3);
  EXPECT_EQ(t.nodes[t.links[t.links_of(h4)[0]].peer(h4).node].name, "leaf2");
}

TEST(LeafSpine, InterfacesAreNamedAfterPeersOnSwitchesAndEthOnHosts) {
  Topology t = generate_leaf_spine(LeafSpineSpec{2, 2, 1});
  int leaf1 = t.find("leaf1"), h1 = t.find("h1");
  std::set<std::string> names;
  for (int l : t.links_of(leaf1)) names.insert(t.links[l].end(leaf1).ifname);
  EXPECT_EQ(names, (std::set<std::string>{"h1", "spine1", "spine2"}));
  EXPECT_EQ(t.links[t.links_of(h1)[0]].end(h1).ifname, "eth0");
}

TEST(RailOptimized, GpusHangOffTheirRailAndTheNodeScaleUpSwitch) {
  Topology t = generate_rail_optimized(RailOptimizedSpec{4, 4, 2, {}});
  EXPECT_EQ(t.host_count(), 16);
  // 4 rail leaves + 2 spines + 4 scale-up switches.
  EXPECT_EQ(t.switches().size(), 10u);
  int g = t.find("n3-g2");
  ASSERT_GE(g, 0);
  ASSERT_EQ(t.links_of(g).size(), 2u);
  const Link& primary = t.links[t.links_of(g)[0]];
  EXPECT_EQ(t.nodes[primary.peer(g).node].name, "leaf2");
  EXPECT_EQ(primary.end(g).ifname, "eth0");
  const Link& su = t.links[t.links_of(g)[1]];
  EXPECT_EQ(t.nodes[su.peer(g).node].name, "n3-su");
  EXPECT_EQ(su.cls, "scale-up");
  EXPECT_EQ(t.nodes[g].local_rank, 1);
  EXPECT_EQ(t.nodes[g].local_size, 4);
  EXPECT_EQ(t.nodes[g].rank, 9);
}

TEST(BuildTopology, ShapesResolveDefaultThenClassThenOverride) {
  Scenario s = load(R"(name: t
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
links:
  default: {rate: 10gbit, delay: 2us}
  leaf-spine: {rate: 100gbit}
  overrides:
    - {link: "leaf1:spine2", loss: 1%}
    - {link: "spine1>leaf2", delay: 50us}
)");
  auto t = build_topology(s);
  ASSERT_TRUE(t.ok()) << t.error().what();
  auto one = [&](const char* a, const char* b) { return t->links[find_links(*t, a, b).at(0)]; };
  EXPECT_EQ(*one("h1", "leaf1").a_to_b.rate_bps, 10'000'000'000u);
  EXPECT_EQ(*one("leaf1", "spine1").a_to_b.rate_bps, 100'000'000'000u);
  EXPECT_EQ(*one("leaf1", "spine1").a_to_b.delay_ns, 2000u);
  Link l12 = one("leaf1", "spine2");
  EXPECT_DOUBLE_EQ(*l12.a_to_b.loss, 0.01);
  EXPECT_DOUBLE_EQ(*l12.b_to_a.loss, 0.01);
  // One direction only: spine1 -> leaf2.
  Link l21 = one("leaf2", "spine1");
  const LinkShape& from_spine = t->nodes[l21.a.node].name == "spine1" ? l21.a_to_b : l21.b_to_a;
  const LinkShape& to_spine = t->nodes[l21.a.node].name == "spine1" ? l21.b_to_a : l21.a_to_b;
  EXPECT_EQ(*from_spine.delay_ns, 50'000u);
  EXPECT_EQ(*to_spine.delay_ns, 2000u);
}

TEST(BuildTopology, DanglingNamesNameFileLineAndField) {
  struct Case {
    const char* yaml;
    const char* expect;
  } cases[] = {
      {"name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}\n"
       "links:\n  overrides:\n    - {link: \"leaf1:spine9\", loss: 1%}\n",
       "test.yaml:5:7: links.overrides.link: no node named 'spine9'"},
      {"name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}\n"
       "links:\n  overrides:\n    - {link: \"h1:h2\", loss: 1%}\n",
       "test.yaml:5:7: links.overrides.link: 'h1' and 'h2' are not linked"},
      {"name: t\ntopology: {kind: fat-tree, k: 4}\nlinks:\n  host-leaf: {rate: 1gbit}\n",
       "test.yaml:4:3: links.host-leaf: no such link class in this topology; valid: default, "
       "host-edge, edge-agg, agg-core, overrides"},
      {"name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}\n"
       "hosts:\n  overrides:\n    - {host: leaf1, cpu: 0.5}\n",
       "hosts.overrides.host: 'leaf1' is a switch"},
      {"name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}\n"
       "faults:\n  - {at: 1s, link: \"leaf1:spine7\", down: true}\n",
       "test.yaml:4:5: faults.link: no node named 'spine7'"},
  };
  for (const auto& c : cases) {
    Scenario s = load(c.yaml);
    auto t = build_topology(s);
    ASSERT_FALSE(t.ok()) << c.yaml;
    EXPECT_NE(t.error().what().find(c.expect), std::string::npos)
        << "got: " << t.error().what() << "\nwant: " << c.expect;
  }
}

TEST(BuildTopology, HostLimitsMergeDefaultsAndOverrides) {
  Scenario s = load(R"(name: t
topology: {kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 2}
hosts:
  cpu: 1.0
  memory: 1G
  overrides:
    - {host: h2, cpu: 0.25}
)");
  auto t = build_topology(s);
  ASSERT_TRUE(t.ok()) << t.error().what();
  const Node& h1 = t->nodes[t->find("h1")];
  const Node& h2 = t->nodes[t->find("h2")];
  EXPECT_DOUBLE_EQ(*h1.limits.cpu, 1.0);
  EXPECT_DOUBLE_EQ(*h2.limits.cpu, 0.25);
  EXPECT_EQ(*h2.limits.memory_bytes, 1ull << 30);
}

}  // namespace
}  // namespace fabemu

namespace fabemu {
namespace {

// Four senders into one host's 100 Gbit/s link take 25 each; a fifth flow that shares the
// senders' leaf uplink but goes elsewhere gets what the incast leaves of that uplink.
TEST(FairShare, AnIncastSharesTheReceiversLinkAndLeavesTheRestToOthers) {
  auto s = load_scenario_string(
      "name: t\ntopology: {kind: leaf-spine, leaves: 3, spines: 1, hosts_per_leaf: 3}\n"
      "links: {default: {rate: 100gbit}}\n",
      "t.yaml");
  ASSERT_TRUE(s);
  auto t = build_topology(*s);
  ASSERT_TRUE(t) << t.error().what();
  auto h = [&](const char* name) { return t->find(name); };
  // h1, h2 on leaf1; h4, h5, h6 on leaf2; h7 on leaf3. Incast h4, h5, h2 -> h1 (a third each
  // of h1's link); the victim h6 -> h7 shares leaf2's uplink with two of them.
  const auto rates = max_min_rates(
      *t, {{h("h4"), h("h1")}, {h("h5"), h("h1")}, {h("h2"), h("h1")}, {h("h6"), h("h7")}});
  ASSERT_EQ(rates.size(), 4u);
  for (int f = 0; f < 3; ++f) EXPECT_NEAR(rates[f], 100e9 / 3, 1e3) << f;
  // leaf2's uplink carries two thirds of the incast: a third is left for the victim.
  EXPECT_NEAR(rates[3], 100e9 / 3, 1e3);
}

TEST(FairShare, EcmpSpreadsAFlowOverEverySpine) {
  auto s = load_scenario_string(
      "name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}\n"
      "links:\n  default: {rate: 100gbit}\n  leaf-spine: {rate: 25gbit}\n",
      "t.yaml");
  ASSERT_TRUE(s);
  auto t = build_topology(*s);
  ASSERT_TRUE(t);
  // One flow across: two 25 Gbit/s uplinks at half each fill at 50.
  const auto rates = max_min_rates(*t, {{t->find("h1"), t->find("h3")}});
  EXPECT_NEAR(rates[0], 50e9, 1e3);
  // Unlimited links: infinity.
  auto u = load_scenario_string(
      "name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}\n", "t.yaml");
  auto tu = build_topology(*u);
  EXPECT_EQ(max_min_rates(*tu, {{tu->find("h1"), tu->find("h2")}})[0],
            std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace fabemu
