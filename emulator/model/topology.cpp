// Topology graph bookkeeping: lookup, port order and interface naming.
#include "model/topology.h"

#include <algorithm>
#include <map>
#include <set>

namespace fabemu {

int Topology::find(std::string_view name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> Topology::hosts() const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].role == Role::Host) out.push_back(static_cast<int>(i));
  std::stable_sort(out.begin(), out.end(),
                   [&](int x, int y) { return nodes[x].rank < nodes[y].rank; });
  return out;
}

std::vector<int> Topology::switches() const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].role == Role::Switch) out.push_back(static_cast<int>(i));
  return out;
}

int Topology::host_count() const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(),
                                        [](const Node& n) { return n.role == Role::Host; }));
}

int Topology::add_node(Node n) {
  if (n.role == Role::Host && n.rank < 0) n.rank = host_count();
  nodes.push_back(std::move(n));
  node_links_.emplace_back();
  return static_cast<int>(nodes.size() - 1);
}

int Topology::add_link(int a, int b, std::string cls) {
  Link l;
  l.a.node = a;
  l.b.node = b;
  l.cls = std::move(cls);
  links.push_back(std::move(l));
  int id = static_cast<int>(links.size() - 1);
  node_links_[a].push_back(id);
  node_links_[b].push_back(id);
  return id;
}

void Topology::name_interfaces() {
  constexpr size_t kMaxIfname = 15;  // IFNAMSIZ - 1
  for (size_t n = 0; n < nodes.size(); ++n) {
    const auto& ports = node_links_[n];
    std::map<std::string, int> peer_count;
    for (int l : ports) peer_count[nodes[links[l].peer(static_cast<int>(n)).node].name]++;
    for (size_t i = 0; i < ports.size(); ++i) {
      Link& l = links[ports[i]];
      LinkEnd& end = l.a.node == static_cast<int>(n) ? l.a : l.b;
      const std::string& peer = nodes[l.peer(static_cast<int>(n)).node].name;
      bool by_peer = nodes[n].role == Role::Switch && peer.size() <= kMaxIfname &&
                     peer_count[peer] == 1 && peer != "lo";
      end.ifname = by_peer ? peer : "eth" + std::to_string(i);
    }
  }
}

void Topology::name_ovs_ports() {
  constexpr size_t kMaxIfname = 15;
  std::set<std::string> taken;  // bridges are netdevs of the same namespace
  for (const Node& n : nodes)
    if (n.role == Role::Switch) taken.insert(n.name);
  std::map<std::string, int> wanted;
  auto preferred = [&](int link, bool b_side) {
    const Link& l = links[link];
    const LinkEnd& self = b_side ? l.b : l.a;
    const LinkEnd& peer = b_side ? l.a : l.b;
    return nodes[self.node].name + "-" + nodes[peer.node].name;
  };
  for (size_t i = 0; i < links.size(); ++i)
    for (bool b_side : {false, true})
      if (nodes[(b_side ? links[i].b : links[i].a).node].role == Role::Switch)
        wanted[preferred(static_cast<int>(i), b_side)]++;
  for (size_t i = 0; i < links.size(); ++i)
    for (bool b_side : {false, true}) {
      LinkEnd& end = b_side ? links[i].b : links[i].a;
      if (nodes[end.node].role != Role::Switch) continue;
      std::string name = preferred(static_cast<int>(i), b_side);
      if (name.size() > kMaxIfname || wanted[name] > 1 || taken.count(name) ||
          is_reserved_with_ovs(name))
        name = "p" + std::to_string(i) + (b_side ? "b" : "a");
      end.ifname = name;
    }
}

bool is_reserved_with_ovs(std::string_view name) {
  return name == kOvsNamespaceNode || name == "ovs-system" || name == "ovs-netdev";
}

std::vector<int> find_links(const Topology& topo, std::string_view a, std::string_view b) {
  std::vector<int> out;
  int na = topo.find(a), nb = topo.find(b);
  if (na < 0 || nb < 0) return out;
  for (int l : topo.links_of(na)) {
    const Link& link = topo.links[l];
    if (link.peer(na).node == nb) out.push_back(l);
  }
  return out;
}

Result<std::vector<Direction>> find_directions(const Topology& topo, std::string_view name) {
  const size_t sep = name.find_first_of(":>");
  if (sep == std::string_view::npos || sep == 0 || sep + 1 == name.size())
    return make_error("'" + std::string(name) +
                          "' is not a link name; valid: 'a:b' (both directions) or 'a>b' (a to b "
                          "only), e.g. leaf1:spine2",
                      EINVAL);
  const std::string_view a = name.substr(0, sep), b = name.substr(sep + 1);
  for (std::string_view n : {a, b})
    if (topo.find(n) < 0) return make_error("no node named '" + std::string(n) + "'", ENOENT);
  const bool one_way = name[sep] == '>';
  std::vector<Direction> out;
  const int na = topo.find(a);
  for (int l : find_links(topo, a, b)) {
    const bool a_is_b_end = topo.links[l].b.node == na;  // the link was made as b:a
    out.push_back({l, a_is_b_end});                      // a to b
    if (!one_way) out.push_back({l, !a_is_b_end});       // and back
  }
  if (out.empty())
    return make_error("no link between " + std::string(a) + " and " + std::string(b), ENOENT);
  return out;
}

std::vector<std::string> link_classes(TopologyKind kind) {
  switch (kind) {
    case TopologyKind::LeafSpine:
      return {"host-leaf", "leaf-spine"};
    case TopologyKind::FatTree:
      return {"host-edge", "edge-agg", "agg-core"};
    case TopologyKind::RailOptimized:
      return {"host-leaf", "leaf-spine", "scale-up"};
    case TopologyKind::Explicit:
      return {"host-switch", "switch-switch", "host-host"};
  }
  return {};
}

}  // namespace fabemu
