// ECMP groups from the plan's routes and their balance over a run: what `status`, `run`'s
// summary, report.jsonl and the HTML report show of how evenly the next hops were used.
#include <gtest/gtest.h>

#include <cmath>

#include "fake_lab.h"
#include "report/report.h"
#include "results/ecmp_groups.h"

namespace fabemu {
namespace {

using unit::load;
using unit::model_of;

const std::string kLeafSpine = R"(name: g
topology: {kind: leaf-spine, leaves: 2, spines: 4, hosts_per_leaf: 2}
links: {default: {rate: 25mbit}}
)";

TEST(EcmpGroups, EachLeafHasOneGroupOverItsUplinksAndSpinesNone) {
  const LabModel m = model_of(kLeafSpine);
  const std::vector<EcmpGroup> groups = ecmp_groups(m);
  // A spine reaches each leaf's hosts over one link; its routes to the other spines' loopbacks
  // over every leaf carry no host traffic and are left out.
  ASSERT_EQ(groups.size(), 2u);
  for (const EcmpGroup& g : groups) {
    const std::string leaf = m.topo.nodes[g.node].name;
    EXPECT_TRUE(leaf == "leaf1" || leaf == "leaf2") << leaf;
    ASSERT_EQ(g.dirs.size(), 4u);
    EXPECT_GE(g.routes, 1);
    for (size_t d : g.dirs) {
      const Link& l = m.topo.links[d / 2];
      // Each member leaves the leaf toward a spine.
      EXPECT_EQ((d % 2 ? l.b : l.a).node, g.node);
      EXPECT_EQ(m.topo.nodes[(d % 2 ? l.a : l.b).node].name.rfind("spine", 0), 0u);
    }
  }
}

TEST(EcmpGroups, AFatTreesEdgesAndAggregationsHaveGroupsTowardEveryOtherPod) {
  const LabModel m = model_of(R"(name: f
topology: {kind: fat-tree, k: 4}
)");
  int edges = 0, aggs = 0;
  for (const EcmpGroup& g : ecmp_groups(m)) {
    ASSERT_EQ(g.dirs.size(), 2u) << m.topo.nodes[g.node].name;  // k/2 uplinks
    (m.topo.nodes[g.node].tier == 1 ? edges : aggs) += 1;
  }
  EXPECT_EQ(edges, 8);  // every edge switch: up to its pod's two aggregations
  EXPECT_EQ(aggs, 8);   // every aggregation: up to its two cores
}

TEST(EcmpGroups, BalanceIsMaxOverMeanAndJainsIndex) {
  const LabModel m = model_of(kLeafSpine);
  const EcmpGroup g = ecmp_groups(m).front();
  auto with = [&](std::vector<uint64_t> bytes) {
    return group_balance(m.topo, g, [&](size_t d) {
      DirectionSample s;
      for (size_t k = 0; k < g.dirs.size(); ++k)
        if (g.dirs[k] == d) s.bytes = bytes[k], s.packets = bytes[k] / 100;
      return s;
    });
  };
  const GroupBalance even = with({100, 100, 100, 100});
  EXPECT_DOUBLE_EQ(even.max_over_mean, 1);
  EXPECT_DOUBLE_EQ(even.jain, 1);
  EXPECT_EQ(even.bytes, 400u);
  const GroupBalance one = with({0, 400, 0, 0});  // every flow hashed onto one spine
  EXPECT_DOUBLE_EQ(one.max_over_mean, 4);
  EXPECT_DOUBLE_EQ(one.jain, 0.25);
  const GroupBalance two = with({200, 200, 0, 0});
  EXPECT_DOUBLE_EQ(two.max_over_mean, 2);
  EXPECT_DOUBLE_EQ(two.jain, 0.5);
  EXPECT_EQ(two.members[0].frames, 2u);
  EXPECT_EQ(two.name.rfind(m.topo.nodes[g.node].name + " > spine", 0), 0u) << two.name;
  const GroupBalance none = with({0, 0, 0, 0});
  EXPECT_EQ(none.max_over_mean, 0);
  EXPECT_EQ(none.jain, 0);
}

TEST(EcmpGroups, TheRunsReportHasEachGroupOverTheRunBusiestFirst) {
  const LabModel m = model_of(kLeafSpine);
  RunReport r;
  TelemetrySample a, b;
  a.dirs.resize(2 * m.topo.links.size());
  b.dirs = a.dirs;
  b.t_s = b.wall_s = 1;
  const std::vector<EcmpGroup> groups = ecmp_groups(m);
  // leaf2's group carried more, all on its first member; leaf1's evenly (after 50 before).
  for (size_t d : groups[0].dirs) a.dirs[d].bytes = 50, b.dirs[d].bytes = 1050;
  b.dirs[groups[1].dirs[0]].bytes = 8000;
  r.samples = {a, b};
  const std::vector<GroupBalance> run = run_group_balances(m, r);
  ASSERT_EQ(run.size(), 2u);
  EXPECT_EQ(run[0].node, groups[1].node);
  EXPECT_DOUBLE_EQ(run[0].max_over_mean, 4);
  EXPECT_EQ(run[1].bytes, 4000u);
  EXPECT_DOUBLE_EQ(run[1].jain, 1);

  std::vector<Json> groups_json;
  for (const Json& j : report_records(m, r))
    if (j["type"] == "ecmp_group") groups_json.push_back(j);
  ASSERT_EQ(groups_json.size(), 2u);
  EXPECT_EQ(groups_json[0]["switch"], m.topo.nodes[groups[1].node].name);
  EXPECT_EQ(groups_json[0]["members"].size(), 4u);
  EXPECT_EQ(groups_json[0]["members"][0]["bytes"], 8000u);
  EXPECT_DOUBLE_EQ(groups_json[1]["jain"].get<double>(), 1);

  const std::string html = report_html(m, r);
  EXPECT_NE(html.find("<h2>ECMP groups</h2>"), std::string::npos);
  EXPECT_NE(html.find("max/mean 4.00, Jain 0.250"), std::string::npos);

  // One sample: nothing over the run.
  r.samples.pop_back();
  EXPECT_TRUE(run_group_balances(m, r).empty());
}

}  // namespace
}  // namespace fabemu
