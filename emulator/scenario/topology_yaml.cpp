// Reading the `topology` section: the kind, its parameters, and explicit nodes and links.
#include "scenario/topology_yaml.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "scenario/link_shape_yaml.h"
#include "scenario/loader.h"

namespace fabemu::detail {
namespace {

struct KindKeys {
  std::string_view name;
  TopologyKind kind;
  std::vector<std::string_view> keys;
};

const std::vector<KindKeys>& kinds() {
  static const std::vector<KindKeys> all = {
      {"leaf-spine", TopologyKind::LeafSpine, {"kind", "leaves", "spines", "hosts_per_leaf"}},
      {"fat-tree", TopologyKind::FatTree, {"kind", "k"}},
      {"rail-optimized",
       TopologyKind::RailOptimized,
       {"kind", "nodes", "gpus_per_node", "spines", "scale_up"}},
      {"explicit", TopologyKind::Explicit, {"kind", "nodes", "links"}},
  };
  return all;
}

bool contains(const std::vector<std::string_view>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Keys of another kind get their own message: "k" under leaf-spine is a mix-up, not a typo.
void check_kind_keys(const Field& topo, const KindKeys& kind) {
  for (const auto& [key, value] : topo.entries()) {
    std::string name = key.node().Scalar();
    if (contains(kind.keys, name)) continue;
    std::string owners;
    for (const KindKeys& other : kinds()) {
      if (!contains(other.keys, name)) continue;
      owners += (owners.empty() ? "" : ", ") + std::string(other.name);
    }
    std::string valid = "; valid for " + std::string(kind.name) + ": " + join(kind.keys);
    if (owners.empty()) key.fail("unknown key" + valid);
    key.fail(name + " is for " + owners + ", not " + std::string(kind.name) + valid);
  }
}

void check_host_count(const Field& at, int64_t hosts, const std::string& how) {
  if (hosts > kMaxHosts) {
    at.fail(how + " = " + std::to_string(hosts) + " hosts; at most " + std::to_string(kMaxHosts) +
            " are supported");
  }
}

LeafSpineSpec read_leaf_spine(const Field& topo) {
  LeafSpineSpec s;
  s.leaves = topo.at("leaves").integer(1, kMaxSwitches);
  s.spines = topo.at("spines").integer(1, kMaxSwitches);
  Field per_leaf = topo.at("hosts_per_leaf");
  s.hosts_per_leaf = per_leaf.integer(1, kMaxHosts);
  check_host_count(per_leaf, int64_t{s.leaves} * s.hosts_per_leaf,
                   std::to_string(s.leaves) + " leaves x " + std::to_string(s.hosts_per_leaf));
  if (s.leaves + s.spines > kMaxSwitches) {
    topo.fail(std::to_string(s.leaves + s.spines) + " switches; at most " +
              std::to_string(kMaxSwitches) + " are supported");
  }
  return s;
}

FatTreeSpec read_fat_tree(const Field& topo) {
  Field k = topo.at("k");
  FatTreeSpec s{static_cast<int>(k.integer(2, 32))};
  // k pods, each of k/2 edge and k/2 aggregation switches: k must split in half.
  if (s.k % 2 != 0) k.fail("k must be even; valid: 2, 4, 6, ... 32");
  int64_t hosts = int64_t{s.k} * s.k * s.k / 4;
  if (hosts > kMaxHosts) {
    k.fail("k=" + std::to_string(s.k) + " gives k^3/4 = " + std::to_string(hosts) +
           " hosts; at most " + std::to_string(kMaxHosts) + " are supported (k <= 24)");
  }
  return s;
}

RailOptimizedSpec read_rail(const Field& topo, uint32_t mtu) {
  RailOptimizedSpec s;
  Field nodes = topo.at("nodes");
  s.nodes = nodes.integer(1, kMaxHosts);
  // One rail switch per GPU index: real nodes have 4 or 8 GPUs.
  s.gpus_per_node = topo.at("gpus_per_node").integer(1, 64);
  s.spines = topo.at("spines").integer(1, kMaxSwitches);
  check_host_count(nodes, int64_t{s.nodes} * s.gpus_per_node,
                   std::to_string(s.nodes) + " nodes x " + std::to_string(s.gpus_per_node));
  // Switches: the spines, one rail leaf per GPU index and one scale-up switch per node.
  if (s.spines + s.gpus_per_node + s.nodes > kMaxSwitches) {
    topo.fail(std::to_string(s.spines) + " spines + " + std::to_string(s.gpus_per_node) +
              " rail leaves + " + std::to_string(s.nodes) +
              " scale-up switches = " + std::to_string(s.spines + s.gpus_per_node + s.nodes) +
              " switches; at most " + std::to_string(kMaxSwitches) + " are supported");
  }
  if (auto up = topo.find("scale_up")) s.scale_up = read_link_shape_only(*up, mtu);
  return s;
}

ExplicitSpec read_explicit(const Field& topo, uint32_t mtu) {
  ExplicitSpec s;
  std::map<std::string, int> line_of;  // node name -> line, for duplicate reports
  int hosts = 0, switches = 0;
  Field nodes = topo.at("nodes");
  for (const Field& item : nodes.items()) {
    item.check_keys({"name", "role"});
    Field name = item.at("name");
    ExplicitNode node;
    node.name = name.str();
    if (!is_valid_node_name(node.name)) {
      name.fail("'" + node.name + "' is not a valid node name; valid: 1-15 of a-z, 0-9, '-', " +
                "starting with a letter, e.g. sw1");
    }
    node.role = item.at("role").choice<Role>({{"host", Role::Host}, {"switch", Role::Switch}});
    node.loc = item.loc();
    auto [it, fresh] = line_of.emplace(node.name, name.loc().line);
    if (!fresh) {
      name.fail("node '" + node.name + "' is already declared on line " +
                std::to_string(it->second) + "; node names must be unique");
    }
    (node.role == Role::Host ? hosts : switches)++;
    s.nodes.push_back(std::move(node));
  }
  if (s.nodes.empty()) nodes.fail("an explicit topology needs at least one node");
  check_host_count(nodes, hosts, "explicit topology has");
  if (switches > kMaxSwitches) {
    nodes.fail(std::to_string(switches) + " switches; at most " + std::to_string(kMaxSwitches) +
               " are supported");
  }

  auto links = topo.find("links");
  if (!links) return s;
  std::map<std::pair<std::string, std::string>, int> link_line;
  for (const Field& item : links->items()) {
    item.check_keys(link_shape_keys_and({"a", "b"}));
    ExplicitLink link;
    for (auto [end, out] : {std::pair{"a", &link.a}, std::pair{"b", &link.b}}) {
      Field f = item.at(end);
      *out = f.str();
      if (!line_of.contains(*out)) {
        f.fail("'" + *out + "' is not a node declared in topology.nodes");
      }
    }
    if (link.a == link.b) item.fail("links " + link.a + " to itself; a link joins two nodes");
    // Links are named "a:b", so one pair of nodes can have only one link between them.
    auto key = std::minmax(link.a, link.b);
    auto [it, fresh] = link_line.emplace(key, item.loc().line);
    if (!fresh) {
      item.fail("a link between " + link.a + " and " + link.b + " is already declared on line " +
                std::to_string(it->second) + "; links are named a:b, so each pair is linked once");
    }
    link.shape = read_link_shape(item, mtu);
    link.loc = item.loc();
    s.links.push_back(std::move(link));
  }
  return s;
}

}  // namespace

TopologySpec read_topology(const Field& topo, uint32_t mtu) {
  std::vector<std::string_view> names;
  for (const KindKeys& k : kinds()) names.push_back(k.name);
  Field kind_field = topo.at("kind", join(names));
  std::string kind_name = kind_field.str();
  const KindKeys* kind = nullptr;
  for (const KindKeys& k : kinds()) {
    if (k.name == kind_name) kind = &k;
  }
  if (!kind) kind_field.fail("unknown value '" + kind_name + "'; valid: " + join(names));
  check_kind_keys(topo, *kind);

  TopologySpec spec;
  spec.kind = kind->kind;
  spec.loc = topo.loc();
  switch (spec.kind) {
    case TopologyKind::LeafSpine:
      spec.leaf_spine = read_leaf_spine(topo);
      break;
    case TopologyKind::FatTree:
      spec.fat_tree = read_fat_tree(topo);
      break;
    case TopologyKind::RailOptimized:
      spec.rail = read_rail(topo, mtu);
      break;
    case TopologyKind::Explicit:
      spec.explicit_ = read_explicit(topo, mtu);
      break;
  }
  return spec;
}

}  // namespace fabemu::detail
