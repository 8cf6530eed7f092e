// Running commands inside emulated nodes: one in the foreground, or one per host with
// tagged output.
#pragma once

#include <string>
#include <vector>

#include "runtime/host_env.h"
#include "util/result.h"

namespace fabemu {

// Moves the calling (single-threaded) process into the node: network and UTS namespaces,
// a private mount namespace with the node's /etc/hosts, /tmp and /sys, its cgroup, its env.
Result<void> enter_node(const NodeContext& c);

// Enters the node and replaces this process with argv. Returns only on failure.
Error exec_in_node(const NodeContext& c, const std::vector<std::string>& argv);

struct NodeExit {
  std::string node;
  int status = 0;  // exit code, or 128 + signal
};

// Runs argv in every node at once, prefixing each output line with "[node] " (unless
// `tag` is false), forwarding SIGINT/SIGTERM; waits for all.
Result<std::vector<NodeExit>> run_in_nodes(const std::vector<NodeContext>& nodes,
                                           const std::vector<std::string>& argv, bool tag = true);

}  // namespace fabemu
