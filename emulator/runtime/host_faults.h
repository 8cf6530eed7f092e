// Host, NIC and partition faults of a running lab: what training jobs mostly die of. Used by
// the fault player (the scenario's timeline) and by `fabemu host` (interactively).
#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"
#include "shaping/link_shaper.h"
#include "util/result.h"

namespace fabemu {

// Every process in the host killed at once (SIGKILL, as a power loss or a kernel panic would
// end them) and its links down in the link model. Returns what happened, for the timeline.
Result<std::string> crash_host(const LabModel& m, const LabPaths& paths, const std::string& host,
                               LinkShaper* maps = nullptr);
// Its links back up: the job's own restart logic may start it again.
Result<std::string> restart_host(const LabModel& m, const LabPaths& paths, const std::string& host,
                                 LinkShaper* maps = nullptr);
// The host's cgroup frozen (every task stopped: a hung host, a long GC pause) or thawed.
Result<std::string> freeze_host(const LabModel& m, const LabPaths& paths, const std::string& host,
                                bool frozen);
// One NIC's link down or up in the link model (the kernel's device stays up: a veth set down
// loses its routes).
Result<std::string> set_nic(const LabModel& m, const LabPaths& paths, const std::string& host,
                            const std::string& nic, bool up, LinkShaper* maps = nullptr);
// Every path between hosts of different groups cut (or healed) at the hosts' own switches:
// a policy rule per pair of addresses there drops what goes from one group to another.
Result<std::string> set_partition(const LabModel& m, const LabPaths& paths,
                                  const std::vector<std::vector<std::string>>& groups, bool cut);

}  // namespace fabemu
