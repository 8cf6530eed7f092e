// Topology model: nodes, ports and links of a fabric, as pure data (no system calls).
#pragma once

#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "util/result.h"

namespace fabemu {

struct Node {
  std::string name;
  Role role = Role::Host;
  int tier = 0;        // 0 host, 1 leaf/edge/scale-up, 2 spine/agg, 3 core
  int rank = -1;       // hosts: 0..N-1 in name order of generation; switches: -1
  int local_rank = 0;  // hosts: index inside its machine (rail-optimized GPU index)
  int local_size = 1;  // hosts: ranks per machine
  HostLimits limits;   // hosts: cgroup limits (scenario defaults + overrides)
};

// One end of a link, as seen from the node that owns the port.
struct LinkEnd {
  int node = -1;
  std::string ifname;  // interface name inside the node's namespace
};

struct Link {
  LinkEnd a, b;
  std::string cls;  // link class: "host-leaf", "leaf-spine", "edge-agg", ...
  LinkShape a_to_b, b_to_a;

  const LinkEnd& end(int node) const { return a.node == node ? a : b; }
  const LinkEnd& peer(int node) const { return a.node == node ? b : a; }
  // The direction that leaves `node`.
  const LinkShape& out_of(int node) const { return a.node == node ? a_to_b : b_to_a; }
};

class Topology {
 public:
  std::vector<Node> nodes;
  std::vector<Link> links;

  // Links of each node in port order: the first link of a host is its primary NIC (eth0).
  const std::vector<int>& links_of(int node) const { return node_links_[node]; }
  int find(std::string_view name) const;  // -1 when absent
  std::vector<int> hosts() const;         // by rank
  std::vector<int> switches() const;
  int host_count() const;

  int add_node(Node n);
  int add_link(int a, int b, std::string cls);
  // Names every port: hosts get eth0.., switches the peer's name when it is unique and fits.
  void name_interfaces();
  // Renames switch ports for Open vSwitch switches, whose ports all sit in one namespace:
  // "SWITCH-PEER" ("leaf1-spine2") where that fits and is unique, else "pLINKa"/"pLINKb".
  void name_ovs_ports();

 private:
  std::vector<std::vector<int>> node_links_;
};

// With fabric.switch: ovs, the name of the lab's namespace that holds the OVS daemons and every
// switch port ("fabemu-LAB-ovs"): no node may take it, nor the devices OVS makes there.
inline constexpr const char* kOvsNamespaceNode = "ovs";
bool is_reserved_with_ovs(std::string_view node_name);

// The link classes a topology kind defines (keys allowed under `links:`).
std::vector<std::string> link_classes(TopologyKind kind);

// Builds the graph for the scenario's topology and resolves every link's shape and every
// host's limits; errors name the scenario position of a dangling name.
Result<Topology> build_topology(const Scenario& scenario);

// "leaf1:spine2" -> the link indices between those nodes (either order); empty when none.
std::vector<int> find_links(const Topology& topo, std::string_view a, std::string_view b);

// One direction of one link: from end a to end b, or back.
struct Direction {
  int link = 0;
  bool b_to_a = false;
  bool operator==(const Direction&) const = default;
};

// "a:b" -> both directions of every a-b link; "a>b" -> the a-to-b direction only. The error
// names what is wrong ("no node spine9", "no link between h1 and h2").
Result<std::vector<Direction>> find_directions(const Topology& topo, std::string_view name);

}  // namespace fabemu
