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

// Aborts the TCP sockets (SOCK_DESTROY) still open in the namespaces at `ns_paths` once their
// processes are gone, and returns how many. A closed socket with unacknowledged data lives on
// in its namespace, retransmitting: after a lossy link ate the peer's reset and `down` removed
// the link, it held its namespace (and `down`'s wait for the kernel) for minutes. TIME_WAIT and
// listening sockets are left to the kernel: neither holds a namespace. A kernel built without
// CONFIG_INET_DIAG_DESTROY answers EOPNOTSUPP.
Result<size_t> abort_tcp_sockets_in_namespaces(const std::vector<std::string>& ns_paths);

}  // namespace fabemu
