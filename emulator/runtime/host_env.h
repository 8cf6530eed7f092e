// The view of one emulated node for a process: its namespaces, files, cgroup and environment.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.h"
#include "util/result.h"

namespace fabemu {

struct NodeContext {
  std::string lab, node;
  bool host = false;
  std::string netns_path, uts_path;  // uts empty for switches
  std::string etc_dir;               // files bind-mounted over /etc (hosts)
  std::string tmp_dir;               // bind-mounted over /tmp (hosts)
  std::string cgroup;                // relative cgroup path, empty when the host has none
  // Further directories bind-mounted in the node's view (source, target): a BGP router's own
  // /etc/frr and /run/frr, so that `vtysh` there talks to its daemons.
  std::vector<std::pair<std::string, std::string>> binds;
  std::vector<std::pair<std::string, std::string>> env;
};

// The directory every host of the lab sees (FABEMU_SHARED_DIR): the lab's shared directory, or
// with a lab across machines the lab's directory in the one all of them share.
std::string workload_dir(const LabModel& m, const LabPaths& paths);

// The context of `node` in a running lab; hosts get the rank environment of `exec --all`
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, ..., *_SOCKET_IFNAME).
NodeContext node_context(const LabModel& model, const LabPaths& paths, int node);

// The context of a user's program (`exec`, `exec --all`, a workload's exec step) in `node`:
// node_context's, and in a host of a dilated lab on the clock `clock` (the scenario's
// hosts.clock unless given; util/host_clock.h). The built-in tools (fabemu-collective,
// perf, incast) keep the wall clock and divide by FABEMU_TIME_SCALE themselves. EOPNOTSUPP when
// clock: fabric is asked and this machine lacks what it needs.
Result<NodeContext> program_context(const LabModel& model, const LabPaths& paths, int node,
                                    std::optional<HostClock> clock = std::nullopt);

}  // namespace fabemu
