// fabric.load_balance in the plan: each router switch that balances in eBPF, with its ECMP
// routes as groups of members (ports and next hops), from the model's routes.
#include <algorithm>
#include <map>

#include "plan/plan.h"
#include "util/prng.h"
#include "util/units.h"

namespace fabemu {

namespace {

// A switch's balancer seed: drawn from the scenario's, like its ECMP hash seed.
uint32_t balance_seed_of(uint64_t scenario_seed, const std::string& node) {
  return static_cast<uint32_t>(link_seed(scenario_seed, "balance " + node) >> 32) | 1u;
}

}  // namespace

std::string load_balance_name(const LoadBalance& lb) {
  switch (lb.mode) {
    case LoadBalanceMode::Ecmp:
      return "ecmp";
    case LoadBalanceMode::Flowlet:
      return "flowlet (gap " + format_time_ns(lb.gap_ns) + ")";
    case LoadBalanceMode::Spray:
      return std::string("spray (") + (lb.random ? "random" : "round_robin") + ")";
    case LoadBalanceMode::Adaptive:
      return lb.per_flowlet ? "adaptive (per flowlet, gap " + format_time_ns(lb.gap_ns) + ")"
                            : std::string("adaptive (per packet)");
  }
  return "?";
}

std::vector<BalanceSwitch> balance_switches(const LabModel& m, const LabPaths& paths,
                                            const std::vector<std::vector<Route>>* routes,
                                            const FabricSpec* modes) {
  // Routes given (after a reroute, from a FIB): a switch left without groups is returned too,
  // so that writing it clears the groups it had.
  const bool given = routes != nullptr;
  if (!routes) routes = &m.routes;
  std::vector<BalanceSwitch> out;
  const Topology& t = m.topo;
  const FabricSpec& fabric = modes ? *modes : m.scenario.fabric;
  const bool every = m.scenario.has_load_balance_step();
  if (!every && !fabric.ebpf_balancing()) return out;
  uint32_t next_group = 0;
  for (size_t id = 0; id < t.nodes.size(); ++id) {
    const Node& n = t.nodes[id];
    const int node = static_cast<int>(id);
    if (n.role != Role::Switch) continue;
    const LoadBalance lb = fabric.load_balance_of(n.name, n.tier);
    if (!every && !lb.in_ebpf(fabric.ecmp_hash)) continue;
    BalanceSwitch b{node_ns(m, paths, node), n.name, static_cast<uint32_t>(id + 1), {}, {}, {}};
    auto ifindex_of = [&](int link) { return port_ifindex(link, t.links[link].b.node == node); };
    for (int l : t.links_of(node)) b.ports.push_back({t.links[l].end(node).ifname, ifindex_of(l)});
    // One group per member set: a leaf's routes to every other leaf share its uplinks.
    std::map<std::vector<std::pair<uint32_t, uint32_t>>, uint32_t> by_members;
    // What the FIB holds more specifically than a group goes to the FIB: the ports' own
    // subnets, the loopback, single next hops.
    constexpr uint32_t kFib = BalanceSwitch::kNoGroup;
    // A host's port is the last hop of the frames to it: their order is counted there.
    for (int l : t.links_of(node)) {
      const bool host = t.nodes[t.links[l].peer(node).node].role == Role::Host;
      b.routes.push_back({Prefix{Ipv4{m.addresses.address_of(t, l, node).v & ~1u}, 31},
                          host ? BalanceSwitch::kLastHop : kFib});
    }
    if (m.addresses.loopback[id]) b.routes.push_back({Prefix{*m.addresses.loopback[id], 32}, kFib});
    for (const Route& r : (*routes)[id]) {
      if (r.nexthops.size() < 2) {
        b.routes.push_back({r.dst, kFib});
        continue;
      }
      std::vector<std::pair<uint32_t, uint32_t>> members;
      for (const Nexthop& h : r.nexthops) members.emplace_back(ifindex_of(h.link), h.gateway.v);
      std::sort(members.begin(), members.end());
      auto [it, fresh] = by_members.emplace(members, next_group);
      if (fresh) {
        BalanceSwitch::Group g{next_group++,
                               lb,
                               fabric.ecmp_hash,
                               balance_seed_of(m.scenario.seed, n.name),
                               m.time_scale.wall_ns(lb.gap_ns),
                               {}};
        for (const auto& [ifindex, gw] : members) g.members.push_back({ifindex, Ipv4{gw}});
        b.groups.push_back(std::move(g));
      }
      b.routes.push_back({r.dst, it->second});
    }
    if (local_node(m, node) && (given || !b.groups.empty())) out.push_back(std::move(b));
  }
  return out;
}

}  // namespace fabemu
