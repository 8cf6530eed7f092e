// Partitioning a lab over machines: groups stay whole, hosts balance, upper tiers spread, the
// same answer every time, and `placement:` is honoured and checked.
#include "plan/partition.h"

#include <gtest/gtest.h>

#include <set>

#include "fake_lab.h"

namespace fabemu {
namespace {

using unit::load;

LabModel model_of(const std::string& topology, const std::string& extra = "") {
  auto m = build_model(load("name: p\ntopology: " + topology + "\n" + extra), 0);
  EXPECT_TRUE(m) << m.error().what();
  return m ? *m : LabModel{};
}

int machine_of(const LabModel& m, const Placement& p, const std::string& node) {
  return p.machine_of[m.topo.find(node)];
}

TEST(Partition, HostsStayWithTheirLeafAndHostsBalance) {
  const LabModel m = model_of("{kind: leaf-spine, leaves: 8, spines: 4, hosts_per_leaf: 8}");
  auto p = partition(m, 4);
  ASSERT_TRUE(p);
  for (int h : m.topo.hosts()) {
    const int leaf = m.topo.links[m.topo.links_of(h).front()].peer(h).node;
    EXPECT_EQ(p->machine_of[h], p->machine_of[leaf]) << m.topo.nodes[h].name;
  }
  const auto loads = machine_loads(m, *p);
  std::set<int> spine_machines;
  for (int s = 1; s <= 4; ++s)
    spine_machines.insert(machine_of(m, *p, "spine" + std::to_string(s)));
  EXPECT_EQ(spine_machines.size(), 4u);  // spread, not all where the most leaves are
  for (const MachineLoad& l : loads) EXPECT_EQ(l.hosts, 16);
  // Only leaf-spine links cross; each spine keeps the links to the leaves of its machine.
  EXPECT_EQ(p->cut_links.size(), 4u * 8 * 3 / 4);
  EXPECT_EQ(static_cast<int>(p->cut_links.size()), min_cut_links(m, *p));
}

TEST(Partition, AFatTreeKeepsItsPodsWhole) {
  const LabModel m = model_of("{kind: fat-tree, k: 8}");
  for (int machines : {2, 4, 8}) {
    auto p = partition(m, machines);
    ASSERT_TRUE(p);
    for (int pod = 0; pod < 8; ++pod) {
      const int first = machine_of(m, *p, "edge" + std::to_string(pod * 4 + 1));
      for (int j = 1; j <= 4; ++j) {
        EXPECT_EQ(machine_of(m, *p, "edge" + std::to_string(pod * 4 + j)), first);
        EXPECT_EQ(machine_of(m, *p, "agg" + std::to_string(pod * 4 + j)), first);
      }
    }
    for (const Link& l : m.topo.links)
      if (l.cls != "agg-core") {
        EXPECT_EQ(p->machine_of[l.a.node], p->machine_of[l.b.node]);
      }
    for (const MachineLoad& l : machine_loads(m, *p)) EXPECT_EQ(l.hosts, 128 / machines);
  }
}

TEST(Partition, ARailOptimizedServerStaysWithItsScaleUpSwitch) {
  const LabModel m = model_of(
      "{kind: rail-optimized, nodes: 8, gpus_per_node: 8, spines: 4, scale_up: {rate: 900gbit}}");
  auto p = partition(m, 4);
  ASSERT_TRUE(p);
  for (int n = 1; n <= 8; ++n) {
    const std::string node = "n" + std::to_string(n);
    for (int g = 1; g <= 8; ++g)
      EXPECT_EQ(machine_of(m, *p, node + "-g" + std::to_string(g)),
                machine_of(m, *p, node + "-su"));
  }
  for (const Link& l : m.topo.links)
    if (l.cls == "scale-up") {
      EXPECT_FALSE(p->cut(&l - &m.topo.links[0]));
    }
  for (const MachineLoad& l : machine_loads(m, *p)) EXPECT_EQ(l.hosts, 16);
}

TEST(Partition, TheSameEveryTime) {
  const LabModel m = model_of("{kind: fat-tree, k: 6}");
  auto a = partition(m, 3), b = partition(m, 3);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->machine_of, b->machine_of);
  EXPECT_EQ(a->cut_links, b->cut_links);
  auto one = partition(m, 1);
  EXPECT_TRUE(one->cut_links.empty());
}

TEST(Partition, PlacementPinsNodesAndTheirGroupsFollow) {
  const LabModel m = model_of("{kind: leaf-spine, leaves: 4, spines: 2, hosts_per_leaf: 2}",
                              "placement: [[spine1, spine2], [], [leaf1]]\n");
  auto p = partition(m, 3);
  ASSERT_TRUE(p) << p.error().what();
  EXPECT_EQ(machine_of(m, *p, "spine1"), 0);
  EXPECT_EQ(machine_of(m, *p, "spine2"), 0);
  EXPECT_EQ(machine_of(m, *p, "leaf1"), 2);
  EXPECT_EQ(machine_of(m, *p, "h1"), 2);  // with its leaf
  EXPECT_FALSE(partition(m, 2));          // placement names three machines
  EXPECT_FALSE(partition(m, 0));
}

TEST(Partition, PlacementIsCheckedAgainstTheTopology) {
  auto m = build_model(load("name: p\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, "
                            "hosts_per_leaf: 1}\nplacement: [[leaf1], [leaf9]]\n"),
                       0);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("test.yaml:3:"), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find("placement[1]: no node named 'leaf9'"), std::string::npos);
  auto twice = load_scenario_string(
      "name: p\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}\n"
      "placement: [[leaf1], [leaf1]]\n",
      "t.yaml");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("placed twice"), std::string::npos);
}

TEST(Partition, NodesFoldIntoRuns) {
  const LabModel m = model_of("{kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 3}");
  std::vector<int> all(m.topo.nodes.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  EXPECT_EQ(describe_nodes(m.topo, all), "spine1-spine2, leaf1-leaf2, h1-h6");
  EXPECT_EQ(describe_nodes(m.topo, {m.topo.find("h1"), m.topo.find("h3"), m.topo.find("h4")}),
            "h1, h3-h4");
}

}  // namespace
}  // namespace fabemu
