// ECMP groups from the model's routes, and their members' balance.
#include "results/ecmp_groups.h"

#include <algorithm>
#include <map>
#include <set>

#include "results/workload.h"

namespace fabemu {

std::vector<EcmpGroup> ecmp_groups(const LabModel& m) {
  const Topology& t = m.topo;
  std::vector<EcmpGroup> out;
  // Routes to switches' loopbacks carry the switches' own traffic (BGP, traceroute), not the
  // hosts': a spine's route to another spine over every leaf is not a group hosts load.
  std::set<Ipv4> loopbacks;
  for (const auto& lo : m.addresses.loopback)
    if (lo) loopbacks.insert(*lo);
  for (size_t node = 0; node < m.routes.size() && node < t.nodes.size(); ++node) {
    if (t.nodes[node].role == Role::Host) continue;
    std::map<std::vector<size_t>, int> routes;  // members -> routes over them
    for (const Route& r : m.routes[node]) {
      if (r.nexthops.size() < 2 || (r.dst.len == 32 && loopbacks.count(r.dst.addr))) continue;
      std::vector<size_t> dirs;
      for (const Nexthop& h : r.nexthops) {
        if (h.link < 0 || static_cast<size_t>(h.link) >= t.links.size()) continue;
        const bool b_to_a = t.links[h.link].a.node != static_cast<int>(node);
        dirs.push_back(2 * static_cast<size_t>(h.link) + (b_to_a ? 1 : 0));
      }
      std::sort(dirs.begin(), dirs.end());
      dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
      if (dirs.size() > 1) ++routes[dirs];
    }
    for (auto& [dirs, n] : routes) out.push_back({static_cast<int>(node), dirs, n});
  }
  return out;
}

GroupBalance group_balance(const Topology& t, const EcmpGroup& g,
                           const std::function<DirectionSample(size_t)>& dir) {
  GroupBalance b;
  b.node = g.node;
  b.routes = g.routes;
  b.name = t.nodes[g.node].name + " >";
  double sum = 0, most = 0;
  std::vector<double> bytes;
  for (size_t k = 0; k < g.dirs.size(); ++k) {
    const size_t d = g.dirs[k];
    const Link& l = t.links[d / 2];
    const DirectionSample s = dir(d);
    b.members.push_back(
        {d, direction_name(t, static_cast<int>(d / 2), d % 2 == 1), s.bytes, s.packets});
    b.name += (k ? "|" : " ") + t.nodes[(d % 2 ? l.a : l.b).node].name;
    b.bytes += s.bytes;
    bytes.push_back(double(s.bytes));
    sum += bytes.back();
    most = std::max(most, bytes.back());
  }
  if (sum > 0) {
    b.max_over_mean = most / (sum / double(g.dirs.size()));
    b.jain = jain_index(bytes);
  }
  return b;
}

std::vector<GroupBalance> group_balances(const LabModel& m,
                                         const std::function<DirectionSample(size_t)>& dir) {
  std::vector<GroupBalance> out;
  for (const EcmpGroup& g : ecmp_groups(m)) out.push_back(group_balance(m.topo, g, dir));
  std::stable_sort(out.begin(), out.end(),
                   [](const GroupBalance& x, const GroupBalance& y) { return x.bytes > y.bytes; });
  return out;
}

Json group_json(const Topology& t, const GroupBalance& g) {
  Json members = Json::array();
  for (const MemberLoad& x : g.members)
    members.push_back({{"direction", x.name}, {"bytes", x.bytes}, {"frames", x.frames}});
  return {{"switch", t.nodes[g.node].name},
          {"name", g.name},
          {"routes", g.routes},
          {"members", members},
          {"bytes", g.bytes},
          {"max_over_mean", g.max_over_mean},
          {"jain", g.jain}};
}

}  // namespace fabemu
