// Finding and stopping the processes that live inside a lab's namespaces.
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace fabemu {

// PIDs whose network or UTS namespace is one of those pinned at `ns_paths`.
std::vector<int> processes_in_namespaces(const std::vector<std::string>& ns_paths);

// SIGTERM, a grace period, then SIGKILL; returns once they are gone (or after a bound).
Result<void> kill_processes_in_namespaces(const std::vector<std::string>& ns_paths);

}  // namespace fabemu
