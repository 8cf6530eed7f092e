// Running commands inside emulated nodes: one in the foreground, or one per host with
// tagged output.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "runtime/host_env.h"
#include "util/process.h"
#include "util/result.h"

namespace fabemu {

// Moves the calling (single-threaded) process into the node: network and UTS namespaces,
// a private mount namespace with the node's /etc/hosts, /tmp and /sys, its cgroup. The node's
// environment (c.env) is the caller's to pass on: ProcessSpec::env, or exec_in_node.
Result<void> enter_node(const NodeContext& c);

// Enters the node and replaces this process with argv, the node's environment set. Returns only
// on failure.
Error exec_in_node(const NodeContext& c, const std::vector<std::string>& argv);

// A ProcessSpec that runs argv inside the node: the node's environment, and entering it between
// fork and exec. Stdio and grouping are the caller's to set.
ProcessSpec node_process(const NodeContext& c, std::vector<std::string> argv);

struct NodeExit {
  std::string node;
  int status = 0;          // exit code, or 128 + signal
  bool timed_out = false;  // stopped at the deadline
  std::string output;      // with RunOptions::keep: its stdout and stderr, as written
};

struct RunOptions {
  bool tag = true;    // prefix each output line with "[node] "
  bool echo = true;   // the output to ours; false: read and dropped
  bool keep = false;  // each node's output in its NodeExit (tagged as `tag` says)
  // 0: wait for ever. At the deadline every process group gets SIGTERM, SIGKILL 3 s later.
  std::chrono::milliseconds timeout{0};
  std::string cwd;  // where the commands start (empty: fabemu's own)
};

// Runs argv in every node at once, each in a process group of its own with stdin from
// /dev/null, forwarding SIGINT/SIGTERM to the groups; waits for all (or the deadline).
Result<std::vector<NodeExit>> run_in_nodes(const std::vector<NodeContext>& nodes,
                                           const std::vector<std::string>& argv,
                                           const RunOptions& options = {});

}  // namespace fabemu
