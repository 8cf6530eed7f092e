// The fault timeline of a run: the scenario's `faults:` expanded into timed steps (pure,
// seeded), and a player that applies them to the running lab while the workload runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "apply/lab_datapath.h"
#include "plan/plan.h"
#include "results/faults.h"
#include "runtime/fib_watch.h"
#include "util/result.h"

namespace fabemu {

// Plays the timeline from `start` on a thread of its own, at the lab's time scale (a step due at
// t of the real fabric is applied t x N after the start); stop() (or the destructor) ends it
// and skips what was not due yet. Link steps go through the link model's maps (`down` drops
// everything in both directions) and, with reroute, replace the routes of every router switch
// with the plan for the fabric without the failed links (what a routing protocol would
// converge to); with routing: bgp the routers' own BGP and BFD do that, and the player records
// when each FIB changed. Host steps write the host's cgroup CPU quota.
class FaultPlayer {
 public:
  // Through `dp` when given (the unit tests' in-memory lab), else the kernel's datapath.
  FaultPlayer(const LabModel& model, const LabPaths& paths, std::vector<FaultStep> steps,
              std::unique_ptr<LabDatapath> dp = nullptr);
  ~FaultPlayer();
  FaultPlayer(const FaultPlayer&) = delete;
  FaultPlayer& operator=(const FaultPlayer&) = delete;

  void start(std::chrono::steady_clock::time_point t0);
  void stop();
  void wait();                            // until every step has been played
  std::vector<AppliedFault> log() const;  // every step, in time order

 private:
  void run(std::stop_token stop);
  Result<std::string> apply(const FaultStep& s);

  const LabModel& model_;
  const LabPaths& paths_;
  std::vector<AppliedFault> log_;
  std::unique_ptr<LabDatapath> dp_;
  std::unique_ptr<FibWatcher> fib_;  // routing: bgp
  std::string fib_error_;            // why there is no watcher
  std::string balance_error_;        // why the balancers could not follow the FIBs (mu_)
  std::chrono::steady_clock::time_point t0_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;  // waits end early when the thread is asked to stop
  std::jthread thread_;
};

}  // namespace fabemu
