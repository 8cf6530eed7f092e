// Static L3 routing: ECMP shortest paths between switches, hosts routed via their leaf.
#pragma once

#include <optional>
#include <set>
#include <vector>

#include "model/addressing.h"
#include "model/topology.h"

namespace fabemu {

struct Nexthop {
  Ipv4 gateway;
  int link = -1;  // the port (link) it leaves through
  bool operator==(const Nexthop&) const = default;
  auto operator<=>(const Nexthop&) const = default;
};

struct Route {
  Prefix dst;
  std::vector<Nexthop> nexthops;  // >1 = ECMP group
  std::optional<Ipv4> src;        // preferred source address (RTA_PREFSRC)
};

// Routes per node (index = node id). Hosts do not forward: paths never transit a host.
// Switches: every other switch's host block and loopback, over all shortest next hops.
// Hosts: a default route via their primary NIC; on a secondary NIC (rail-optimized scale-up)
// /32 routes to the hosts that share that switch, so GPU peers of one machine talk over it.
// `failed`: links (by index) that carry nothing, as after a routing protocol saw them fail; the
// routes then go around them, and the error says when nothing can.
// `summarize`: default routes over a switch's main upward group (a real leaf's); off, every
// destination has its own route, as a routing protocol installs them.
Result<std::vector<std::vector<Route>>> plan_routes(const Topology& topo, const AddressPlan& plan,
                                                    const std::set<int>& failed = {},
                                                    bool summarize = true);

// Whether a route of `node` leads to switches only (a route between switches, which a BGP
// router learns from its peers): it has next hops and each reaches a switch.
bool via_switches(const Topology& topo, int node, const Route& route);

// Hop distances between switches over switch-switch links (-1 = unreachable).
std::vector<std::vector<int>> switch_distances(const Topology& topo,
                                               const std::set<int>& failed = {});

}  // namespace fabemu
