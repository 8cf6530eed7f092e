// When the routers' FIBs change (routing: bgp): one rtnetlink socket per local BGP router,
// subscribed to its IPv4 route changes, read on a thread of its own. The fault player turns
// the changes after a link fault into its detection and convergence time.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "plan/plan.h"
#include "util/result.h"
#include "util/unique_fd.h"

namespace fabemu {

struct FibChange {
  std::chrono::steady_clock::time_point at;
  int node = -1;
  int routes = 0;  // route messages (added, replaced, deleted) read in one go
};

class FibWatcher {
 public:
  // Subscribes in every local BGP router's namespace; an error names the router it failed in.
  // `on_change` (if any) is called on the watcher's thread after each round of changes read.
  static Result<std::unique_ptr<FibWatcher>> start(const LabModel& m, const LabPaths& paths,
                                                   std::function<void()> on_change = {});
  ~FibWatcher();
  std::vector<FibChange> changes() const;

 private:
  FibWatcher() = default;
  void run(std::stop_token stop);
  std::vector<std::pair<int, UniqueFd>> sockets_;  // node, socket
  mutable std::mutex mu_;
  std::vector<FibChange> changes_;
  std::function<void()> on_change_;
  std::jthread thread_;
};

}  // namespace fabemu
