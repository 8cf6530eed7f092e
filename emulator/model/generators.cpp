// Generators: leaf-spine, fat-tree, rail-optimized and explicit topologies from their specs.
#include "model/generators.h"

namespace fabemu {
namespace {

Node make_switch(std::string name, int tier) {
  Node n;
  n.name = std::move(name);
  n.role = Role::Switch;
  n.tier = tier;
  return n;
}

Node make_host(std::string name) {
  Node n;
  n.name = std::move(name);
  n.role = Role::Host;
  return n;
}

std::string numbered(const char* prefix, int i) {
  return prefix + std::to_string(i);
}

}  // namespace

Topology generate_leaf_spine(const LeafSpineSpec& s) {
  Topology t;
  std::vector<int> spines, leaves;
  for (int i = 1; i <= s.spines; ++i)
    spines.push_back(t.add_node(make_switch(numbered("spine", i), 2)));
  for (int i = 1; i <= s.leaves; ++i)
    leaves.push_back(t.add_node(make_switch(numbered("leaf", i), 1)));
  int h = 1;
  for (int leaf : leaves)
    for (int j = 0; j < s.hosts_per_leaf; ++j)
      t.add_link(t.add_node(make_host(numbered("h", h++))), leaf, "host-leaf");
  for (int leaf : leaves)
    for (int spine : spines) t.add_link(leaf, spine, "leaf-spine");
  t.name_interfaces();
  return t;
}

// k-ary fat-tree (Al-Fares et al.): k pods of k/2 edge and k/2 aggregation switches,
// (k/2)^2 cores; aggregation switch j of every pod connects to cores j*k/2 .. j*k/2+k/2-1.
Topology generate_fat_tree(const FatTreeSpec& s) {
  Topology t;
  const int half = s.k / 2;
  std::vector<int> cores;
  for (int i = 1; i <= half * half; ++i)
    cores.push_back(t.add_node(make_switch(numbered("core", i), 3)));
  int h = 1;
  for (int pod = 0; pod < s.k; ++pod) {
    std::vector<int> aggs, edges;
    for (int j = 0; j < half; ++j)
      aggs.push_back(t.add_node(make_switch(numbered("agg", pod * half + j + 1), 2)));
    for (int j = 0; j < half; ++j)
      edges.push_back(t.add_node(make_switch(numbered("edge", pod * half + j + 1), 1)));
    for (int edge : edges)
      for (int j = 0; j < half; ++j)
        t.add_link(t.add_node(make_host(numbered("h", h++))), edge, "host-edge");
    for (int edge : edges)
      for (int agg : aggs) t.add_link(edge, agg, "edge-agg");
    for (int j = 0; j < half; ++j)
      for (int c = 0; c < half; ++c) t.add_link(aggs[j], cores[j * half + c], "agg-core");
  }
  t.name_interfaces();
  return t;
}

// Rail-optimized: GPU g of every node hangs off rail leaf g (eth0, its primary NIC); the GPUs
// of one node also share a node-local scale-up switch `nX-su` (eth1), like an NVLink domain.
Topology generate_rail_optimized(const RailOptimizedSpec& s) {
  Topology t;
  std::vector<int> spines, leaves;
  for (int i = 1; i <= s.spines; ++i)
    spines.push_back(t.add_node(make_switch(numbered("spine", i), 2)));
  for (int i = 1; i <= s.gpus_per_node; ++i)
    leaves.push_back(t.add_node(make_switch(numbered("leaf", i), 1)));
  for (int x = 1; x <= s.nodes; ++x) {
    std::string prefix = numbered("n", x);
    std::vector<int> gpus;
    for (int g = 1; g <= s.gpus_per_node; ++g) {
      Node host = make_host(prefix + "-g" + std::to_string(g));
      host.local_rank = g - 1;
      host.local_size = s.gpus_per_node;
      int id = t.add_node(std::move(host));
      t.add_link(id, leaves[g - 1], "host-leaf");
      gpus.push_back(id);
    }
    int su = t.add_node(make_switch(prefix + "-su", 1));
    for (int gpu : gpus) t.add_link(gpu, su, "scale-up");
  }
  for (int leaf : leaves)
    for (int spine : spines) t.add_link(leaf, spine, "leaf-spine");
  t.name_interfaces();
  return t;
}

Topology generate_explicit(const ExplicitSpec& s) {
  Topology t;
  for (const auto& n : s.nodes) {
    Node node = n.role == Role::Host ? make_host(n.name) : make_switch(n.name, 1);
    t.add_node(std::move(node));
  }
  for (const auto& l : s.links) {
    int a = t.find(l.a), b = t.find(l.b);
    bool ha = t.nodes[a].role == Role::Host, hb = t.nodes[b].role == Role::Host;
    const char* cls = ha && hb ? "host-host" : (ha || hb ? "host-switch" : "switch-switch");
    // Keep host-switch links oriented host first, so `a` is always the host side.
    if (!ha && hb) std::swap(a, b);
    t.add_link(a, b, cls);
  }
  t.name_interfaces();
  return t;
}

}  // namespace fabemu
