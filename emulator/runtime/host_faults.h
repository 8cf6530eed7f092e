// Host, NIC and partition faults of a running lab: what training jobs mostly die of. Used by
// the fault player (the scenario's timeline) and by `fabemu host` (interactively), through the
// lab's datapath (the kernel's, or the unit tests' in-memory one).
#pragma once

#include <string>
#include <vector>

#include "apply/lab_datapath.h"
#include "plan/plan.h"
#include "util/result.h"

namespace fabemu {

// Every process in the host killed at once (SIGKILL, as a power loss or a kernel panic would
// end them) and its links down in the link model. Returns what happened, for the timeline.
Result<std::string> crash_host(const LabModel& m, const LabPaths& paths, const std::string& host,
                               LabDatapath& dp);
// Its links back up: the job's own restart logic may start it again.
Result<std::string> restart_host(const LabModel& m, const LabPaths& paths, const std::string& host,
                                 LabDatapath& dp);
// The host's cgroup frozen (every task stopped: a hung host, a long GC pause) or thawed.
Result<std::string> freeze_host(const LabModel& m, const std::string& host, bool frozen,
                                LabDatapath& dp);
// One NIC's link down or up in the link model (the kernel's device stays up: a veth set down
// loses its routes).
Result<std::string> set_nic(const LabModel& m, const LabPaths& paths, const std::string& host,
                            const std::string& nic, bool up, LabDatapath& dp);
// Every path between hosts of different groups cut (or healed) at the hosts' own switches:
// a policy rule per pair of addresses there drops what goes from one group to another.
Result<std::string> set_partition(const LabModel& m,
                                  const std::vector<std::vector<std::string>>& groups, bool cut,
                                  LabDatapath& dp);

}  // namespace fabemu
