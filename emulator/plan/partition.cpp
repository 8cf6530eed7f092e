// Partitioning: groups that must stay together, balanced by hosts; the other switches where
// their neighbours are.
#include "plan/partition.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace fabemu {
namespace {

// Union-find over nodes.
struct Groups {
  std::vector<int> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

// The nodes that must stay on one machine: a host and the switch it hangs from (a GPU and its
// server's scale-up switch: an NVLink domain is one chassis), and a fat-tree's pod.
std::vector<std::vector<int>> keep_together(const LabModel& m) {
  const Topology& t = m.topo;
  Groups g(t.nodes.size());
  for (int h : t.hosts()) {
    const auto& links = t.links_of(h);
    int home = t.links[links.front()].peer(h).node;
    for (int l : links)
      if (t.links[l].cls == "scale-up") home = t.links[l].peer(h).node;
    g.join(h, home);
  }
  if (m.scenario.topology.kind == TopologyKind::FatTree)
    for (const Link& l : t.links)
      if (l.cls == "edge-agg") g.join(l.a.node, l.b.node);
  std::map<int, std::vector<int>> by_root;
  for (size_t n = 0; n < t.nodes.size(); ++n) by_root[g.find(static_cast<int>(n))].push_back(n);
  std::vector<std::vector<int>> out;
  for (auto& [root, nodes] : by_root) {
    const bool has_host = std::any_of(nodes.begin(), nodes.end(),
                                      [&](int n) { return t.nodes[n].role == Role::Host; });
    if (has_host) out.push_back(std::move(nodes));
  }
  return out;
}

int hosts_in(const Topology& t, const std::vector<int>& nodes) {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(),
                                        [&](int n) { return t.nodes[n].role == Role::Host; }));
}

}  // namespace

Result<Placement> partition(const LabModel& model, int machines) {
  const Topology& t = model.topo;
  const PlacementSpec& pinned = model.scenario.placement;
  if (machines < 1) return make_error("a lab needs at least one machine", EINVAL);
  if (static_cast<int>(pinned.machines.size()) > machines) {
    const std::string where =
        pinned.locs.back().empty() ? std::string("placement") : pinned.locs.back().front().str();
    return make_error(where + ": placement names " + std::to_string(pinned.machines.size()) +
                          " machines, and there are " + std::to_string(machines),
                      EINVAL);
  }
  Placement p;
  p.machines = machines;
  p.machine_of.assign(t.nodes.size(), -1);
  for (size_t mi = 0; mi < pinned.machines.size(); ++mi)
    for (const std::string& name : pinned.machines[mi]) p.machine_of[t.find(name)] = int(mi);

  std::vector<int> hosts(machines, 0), nodes(machines, 0);
  auto place = [&](int n, int mi) {
    p.machine_of[n] = mi;
    ++nodes[mi];
    if (t.nodes[n].role == Role::Host) ++hosts[mi];
  };
  for (size_t n = 0; n < t.nodes.size(); ++n)
    if (p.machine_of[n] >= 0) {
      const int mi = p.machine_of[n];
      p.machine_of[n] = -1;
      place(static_cast<int>(n), mi);
    }

  // Groups, the largest first, each to the machine with the fewest hosts (a pinned member
  // takes its group along).
  auto groups = keep_together(model);
  std::stable_sort(groups.begin(), groups.end(),
                   [&](const auto& a, const auto& b) { return hosts_in(t, a) > hosts_in(t, b); });
  for (const auto& group : groups) {
    int target = -1;
    for (int n : group)
      if (p.machine_of[n] >= 0) {
        target = p.machine_of[n];
        break;
      }
    if (target < 0)
      for (int mi = 0; mi < machines; ++mi)
        if (target < 0 || hosts[mi] < hosts[target] ||
            (hosts[mi] == hosts[target] && nodes[mi] < nodes[target]))
          target = mi;
    for (int n : group)
      if (p.machine_of[n] < 0) place(n, target);
  }

  // The rest (spines, cores, rail leaves), lower tiers first: each where it adds the least load,
  // counting a port as 1 and the tunnel end each cut link adds on both machines as kCutCost
  // more, so that the upper tiers spread instead of crowding where their neighbours are.
  constexpr double kCutCost = 2;
  std::vector<double> load(machines, 0);
  for (const Link& l : t.links) {
    const int a = p.machine_of[l.a.node], b = p.machine_of[l.b.node];
    if (a >= 0) load[a] += 1;
    if (b >= 0) load[b] += 1;
    if (a >= 0 && b >= 0 && a != b) load[a] += kCutCost, load[b] += kCutCost;
  }
  std::vector<int> rest;
  for (size_t n = 0; n < t.nodes.size(); ++n)
    if (p.machine_of[n] < 0) rest.push_back(static_cast<int>(n));
  std::stable_sort(rest.begin(), rest.end(),
                   [&](int a, int b) { return t.nodes[a].tier < t.nodes[b].tier; });
  for (int n : rest) {
    double best_cost = 0;
    int best = -1;
    for (int mi = 0; mi < machines; ++mi) {
      double cost = load[mi];
      for (int l : t.links_of(n)) {
        const int other = p.machine_of[t.links[l].peer(n).node];
        cost += 1 + (other >= 0 && other != mi ? kCutCost : 0);
      }
      if (best < 0 || cost < best_cost - 1e-9) best = mi, best_cost = cost;
    }
    place(n, best);
    for (int l : t.links_of(n)) {
      const int other = p.machine_of[t.links[l].peer(n).node];
      load[best] += 1;
      if (other >= 0) {
        load[other] += 1;
        if (other != best) load[best] += kCutCost, load[other] += kCutCost;
      }
    }
  }
  for (size_t l = 0; l < t.links.size(); ++l)
    if (p.machine_of[t.links[l].a.node] != p.machine_of[t.links[l].b.node])
      p.cut_links.push_back(static_cast<int>(l));
  return p;
}

int min_cut_links(const LabModel& m, const Placement& p) {
  const Topology& t = m.topo;
  std::vector<bool> grouped(t.nodes.size(), false);
  for (const auto& g : keep_together(m))
    for (int n : g) grouped[n] = true;
  int cuts = 0;
  for (const Link& l : t.links)  // between groups: cut wherever the groups are
    if (grouped[l.a.node] && grouped[l.b.node] && p.machine_of[l.a.node] != p.machine_of[l.b.node])
      ++cuts;
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    if (grouped[n]) continue;
    std::vector<int> near(p.machines, 0);
    int degree = 0;
    for (int l : t.links_of(static_cast<int>(n))) {
      const int peer = t.links[l].peer(static_cast<int>(n)).node;
      if (!grouped[peer]) continue;  // upper to upper: counted as if together
      ++near[p.machine_of[peer]];
      ++degree;
    }
    cuts += degree - *std::max_element(near.begin(), near.end());
  }
  return cuts;
}

std::vector<MachineLoad> machine_loads(const LabModel& m, const Placement& p) {
  const Topology& t = m.topo;
  std::vector<MachineLoad> out(p.machines);
  for (size_t n = 0; n < t.nodes.size(); ++n)
    (t.nodes[n].role == Role::Host ? out[p.machine_of[n]].hosts : out[p.machine_of[n]].switches)++;
  for (size_t l = 0; l < t.links.size(); ++l) {
    const int a = p.machine_of[t.links[l].a.node], b = p.machine_of[t.links[l].b.node];
    if (a == b) {
      ++out[a].links;
    } else {
      ++out[a].cut_ends;
      ++out[b].cut_ends;
    }
  }
  // The lab's demand is spread over its ports; a machine carries its ports' share.
  if (const auto demand = lab_demand(m); demand && !t.links.empty()) {
    std::vector<int> ports(p.machines, 0);
    for (const Link& l : t.links) {
      ++ports[p.machine_of[l.a.node]];
      ++ports[p.machine_of[l.b.node]];
    }
    for (int mi = 0; mi < p.machines; ++mi)
      out[mi].demand = *demand * ports[mi] / (2.0 * double(t.links.size()));
  }
  return out;
}

std::string describe_nodes(const Topology& t, const std::vector<int>& nodes) {
  // Runs of one prefix with consecutive numbers fold: h1 h2 h3 -> h1-h3.
  auto split = [](const std::string& name) {
    size_t d = name.find_last_not_of("0123456789");
    if (d == std::string::npos || d + 1 == name.size()) return std::pair{name, -1};
    return std::pair{name.substr(0, d + 1), std::stoi(name.substr(d + 1))};
  };
  std::string out;
  for (size_t i = 0; i < nodes.size();) {
    const auto [prefix, first] = split(t.nodes[nodes[i]].name);
    size_t j = i + 1;
    int last = first;
    while (first >= 0 && j < nodes.size()) {
      const auto [p2, n2] = split(t.nodes[nodes[j]].name);
      if (p2 != prefix || n2 != last + 1) break;
      last = n2;
      ++j;
    }
    out += (out.empty() ? "" : ", ") + t.nodes[nodes[i]].name;
    if (last > first) out += "-" + t.nodes[nodes[j - 1]].name;
    i = j;
  }
  return out;
}

}  // namespace fabemu
