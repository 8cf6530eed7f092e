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
#include "runtime/fib_watch.h"
#include "util/result.h"

namespace fabemu {

// What a fault step reports on a machine that has nothing of it (a lab across machines).
inline constexpr const char* kElsewhere = "on another machine";

// One thing to do at one time. Flaps are unrolled into downs and ups, a slow host with `for`
// into a slow step and a restore.
struct FaultStep {
  uint64_t at_ns = 0;  // after the workload starts
  enum class Kind {
    Shape,
    Down,
    Up,
    Cpu,
    Crash,
    Restart,
    Freeze,
    Thaw,
    NicDown,
    NicUp,
    Partition,
    Heal
  } kind = Kind::Shape;
  std::string target;                            // the link ("a:b", "a>b") or the host
  std::string nic;                               // NicDown, NicUp
  std::vector<std::vector<std::string>> groups;  // Partition, Heal
  LinkShape shape;                               // Shape: what changes
  bool reroute = true;                           // Down/Up: the routes move off the link and back
  std::optional<double> cpu;  // Cpu: the quota, unset = the host's own limit again
  bool link_step() const { return kind == Kind::Down || kind == Kind::Up; }
  size_t event = 0;  // index in scenario.faults
  std::string what;  // "leaf1:spine1 down (flap 2/3)"
};

// The timeline in time order (stable for equal times). Jitter of flaps comes from a PRNG seeded
// by the scenario's seed and the event's index: the same scenario gives the same steps.
std::vector<FaultStep> expand_faults(const Scenario& scenario);

// What happened to one step: when it was due and when it took effect, both relative to the
// workload's start in the real fabric's time (and on the wall clock: a dilated lab's times are
// N times longer), and what went wrong if it failed.
struct AppliedFault {
  FaultStep step;
  double due_s = 0, applied_s = 0;
  double due_wall_s = 0, applied_wall_s = 0;
  bool done = false;  // false: failed (error says why) or not reached before the end
  std::string error;
  std::string detail;  // "routes changed on 4 switches", ...
  // routing: bgp, link steps: the routers' FIB changes after it (before the next link step),
  // the first and last in the real fabric's seconds after the step took effect.
  int fib_switches = 0, fib_routes = 0;
  std::optional<double> fib_first_s, fib_last_s;
};

// The timeline as not played (yet): each step with its due times, real and wall.
std::vector<AppliedFault> fault_log(const LabModel& model, std::vector<FaultStep> steps);

// What a run of this lab will make of its fault timeline, said before the workload starts: when
// the last step is due on the wall clock (a dilated lab's 1 s is N s) against the workload's
// length by the link model, and which steps the workload will end before. Empty without faults.
std::string fault_timeline_note(const LabModel& model);

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
  std::chrono::steady_clock::time_point t0_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;  // waits end early when the thread is asked to stop
  std::jthread thread_;
};

}  // namespace fabemu
