// What flows between hosts deserve: their max-min fair rates in a fluid model of the fabric,
// each flow spread evenly over its equal-cost next hops (ECMP) and every link direction's rate
// shared max-min between the flows that cross it. The yardstick a victim flow's measured
// throughput is read against when an incast (or PFC spreading it) takes more than its share.
#pragma once

#include <utility>
#include <vector>

#include "model/topology.h"

namespace fabemu {

// Rates in bit/s of the real fabric for flows (from host, to host), in the order given; a flow
// whose path has no rate limit anywhere gets infinity.
std::vector<double> max_min_rates(const Topology& t, const std::vector<std::pair<int, int>>& flows);

}  // namespace fabemu
