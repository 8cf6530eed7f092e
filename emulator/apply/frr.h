// FRR's daemons for a BGP router switch (routing: bgp): found, started in the switch's
// namespace with its own /etc/frr and /run/frr, and its FIB compared with the routing plan.
#pragma once

#include <string>
#include <vector>

#include "apply/rtnl.h"
#include "plan/plan.h"
#include "util/result.h"

namespace fabemu {

// Where Debian's frr package puts the daemons; an error saying how to get them otherwise.
struct FrrTools {
  std::string dir = "/usr/lib/frr";
  unsigned uid = 0, gid = 0;  // the daemons drop to user frr, which must own their directories
};
Result<FrrTools> find_frr(const std::vector<std::string>& daemons);

// Starts a.daemons (each detaches) from the calling thread's network namespace.
Result<void> start_frr_daemons(const FrrTools& tools, const StartRouter& a);

// What of `a.routes` the FIB read back does not hold yet ("10.64.1.0/26 via 10.64.0.3 (want
// 10.64.0.3 10.64.0.5)", up to `max` lines); empty when it holds them all.
std::vector<std::string> missing_routes(const AwaitRoutes& a,
                                        const std::vector<RtnlSocket::KernelRoute>& fib,
                                        size_t max = 3);

}  // namespace fabemu
