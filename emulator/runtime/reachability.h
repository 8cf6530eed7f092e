// All-pairs reachability: every host sends ICMP echo to every other host across the fabric.
#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"
#include "results/reachability.h"
#include "util/result.h"

namespace fabemu {

// From inside each host's namespace (one thread per host), sends echo requests with a raw
// ICMP socket to `max_peers` other hosts (all when the lab is small), retrying lost ones.
Result<ReachabilityReport> check_reachability(const LabModel& model, const LabPaths& paths,
                                              int max_peers = 64, int timeout_ms = 1000);

}  // namespace fabemu
