// eBGP between router switches as in RFC 7938 ("Use of BGP for Routing in Large-Scale Data
// Centers"), planned purely: ASNs, sessions over the /31s, announced prefixes, and the FIB
// every router must end up with (the static plan's routes, unsummarized).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/addressing.h"
#include "model/routing.h"
#include "model/topology.h"

namespace fabemu {

struct BgpNeighbor {
  int link = -1;  // the /31 the session runs over
  Ipv4 address;   // the peer's end of it
  uint32_t asn = 0;
  int node = -1;  // the peer
};

struct BgpRouter {
  int node = -1;
  uint32_t asn = 0;
  Ipv4 router_id;                      // its loopback
  std::vector<BgpNeighbor> neighbors;  // one per link to another switch
  std::vector<Prefix> networks;        // what it announces: its host block and loopback
  // The routes its FIB must hold once BGP has converged (destination and the set of next
  // hops): the static plan's routes between switches, every destination on its own, through
  // the next hops whose paths BGP accepts (no ASN twice: the loopbacks of switches that share
  // this one's ASN are not learned).
  std::vector<Route> fib;
};

// ASNs as RFC 7938 numbers them: the top tier shares one (so that no path turns down and
// back up through it), every leaf (tier 1) has its own, and switches of the tiers between
// share one per group that serves the same switches below (a fat-tree's pod). Private 2-byte
// ASNs from 64512 while they suffice, else 4-byte ones from 4200000000.
std::vector<uint32_t> plan_asns(const Topology& topo);

// One router per switch that has a link to another switch (a scale-up switch with only hosts
// runs none). Fails where the static plan fails (a fabric that is not connected).
Result<std::vector<BgpRouter>> plan_bgp(const Topology& topo, const AddressPlan& plan);

}  // namespace fabemu
