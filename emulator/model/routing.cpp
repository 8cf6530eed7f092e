// Route planning: BFS over the switch graph from every destination switch.
#include "model/routing.h"

#include <algorithm>
#include <deque>
#include <map>

namespace fabemu {

std::vector<std::vector<int>> switch_distances(const Topology& t, const std::set<int>& failed) {
  const int n = static_cast<int>(t.nodes.size());
  std::vector<std::vector<int>> dist(n);
  for (int src : t.switches()) {
    auto& d = dist[src];
    d.assign(n, -1);
    d[src] = 0;
    std::deque<int> queue{src};
    while (!queue.empty()) {
      int u = queue.front();
      queue.pop_front();
      for (int l : t.links_of(u)) {
        int v = t.links[l].peer(u).node;
        if (t.nodes[v].role != Role::Switch || d[v] >= 0 || failed.count(l)) continue;
        d[v] = d[u] + 1;
        queue.push_back(v);
      }
    }
  }
  return dist;
}

bool via_switches(const Topology& t, int node, const Route& route) {
  return !route.nexthops.empty() &&
         std::all_of(route.nexthops.begin(), route.nexthops.end(), [&](const Nexthop& h) {
           return t.nodes[t.links[h.link].peer(node).node].role == Role::Switch;
         });
}

namespace {

// Like a real Clos leaf, a switch whose routes mostly go "up" (to switches of a higher tier)
// over one ECMP group gets a default route over that group instead of one route per
// destination: the same forwarding with far fewer routes (a 512-host leaf-spine: ~1.7k routes
// instead of ~10k). Only upward groups qualify, so default routes never form a loop.
void summarize_upward(const Topology& t, int r, std::vector<Route>& routes) {
  auto upward = [&](const Route& route) {
    for (const Nexthop& h : route.nexthops)
      if (t.nodes[t.links[h.link].peer(r).node].tier <= t.nodes[r].tier) return false;
    return !route.nexthops.empty();
  };
  std::map<std::vector<Nexthop>, int> groups;
  for (const Route& route : routes)
    if (upward(route)) groups[route.nexthops]++;
  auto best = std::max_element(groups.begin(), groups.end(),
                               [](const auto& x, const auto& y) { return x.second < y.second; });
  if (best == groups.end() || best->second < 2) return;
  const std::vector<Nexthop> group = best->first;
  std::erase_if(routes, [&](const Route& route) { return route.nexthops == group; });
  routes.push_back({Prefix{Ipv4{0}, 0}, group});
}

}  // namespace

Result<std::vector<std::vector<Route>>> plan_routes(const Topology& t, const AddressPlan& plan,
                                                    const std::set<int>& failed, bool summarize) {
  const int n = static_cast<int>(t.nodes.size());
  std::vector<std::vector<Route>> routes(n);
  auto dist = switch_distances(t, failed);
  const auto switches = t.switches();

  // Switch to switch: host blocks and loopbacks of every reachable switch.
  for (int r : switches) {
    for (int dst : switches) {
      if (dst == r || dist[dst][r] < 0) continue;
      std::vector<Nexthop> hops;
      for (int l : t.links_of(r)) {
        int peer = t.links[l].peer(r).node;
        if (t.nodes[peer].role == Role::Switch && !failed.count(l) &&
            dist[dst][peer] == dist[dst][r] - 1)
          hops.push_back({plan.address_of(t, l, peer), l});
      }
      if (plan.edge_block[dst]) routes[r].push_back({*plan.edge_block[dst], hops});
      routes[r].push_back({Prefix{*plan.loopback[dst], 32}, hops});
    }
  }

  for (int h : t.hosts()) {
    const auto& ports = t.links_of(h);
    if (ports.empty()) return make_error("host " + t.nodes[h].name + " has no links");
    int primary = ports.front();
    int primary_peer = t.links[primary].peer(h).node;
    if (t.nodes[primary_peer].role == Role::Switch)
      routes[h].push_back(
          {Prefix{Ipv4{0}, 0}, {{plan.address_of(t, primary, primary_peer), primary}}});
    // Secondary NICs: reach the other hosts on that switch directly, and let the switch reach
    // this host's primary address through this port. Packets leave with the primary address
    // as source, the one peers have a route back to (the NIC's own /31 is known only there).
    const Ipv4 self = plan.host_address(t, h);
    for (size_t i = 1; i < ports.size(); ++i) {
      int l = ports[i];
      int sw = t.links[l].peer(h).node;
      if (t.nodes[sw].role != Role::Switch) continue;
      Nexthop via_sw{plan.address_of(t, l, sw), l};
      routes[h].push_back({Prefix{*plan.loopback[sw], 32}, {via_sw}, self});
      for (int ol : t.links_of(sw)) {
        int other = t.links[ol].peer(sw).node;
        if (other == h || t.nodes[other].role != Role::Host) continue;
        routes[h].push_back({Prefix{plan.host_address(t, other), 32}, {via_sw}, self});
      }
      routes[sw].push_back({Prefix{plan.host_address(t, h), 32}, {{plan.address_of(t, l, h), l}}});
    }
  }

  if (summarize)
    for (int r : switches) summarize_upward(t, r, routes[r]);

  // Every host must reach every other host: a host hangs off some switch, and all those
  // switches must be mutually reachable (or be the same switch).
  std::vector<int> attach;
  for (int h : t.hosts()) {
    int peer = t.links[t.links_of(h).front()].peer(h).node;
    if (t.nodes[peer].role == Role::Switch) attach.push_back(peer);
  }
  for (int a : attach)
    for (int b : attach)
      if (dist[a][b] < 0)
        return make_error("topology is not connected: switch " + t.nodes[a].name +
                          " cannot reach switch " + t.nodes[b].name);
  return routes;
}

}  // namespace fabemu
