// The fault timeline of a run as data: the scenario's `faults:` expanded into timed steps (pure,
// seeded), and what became of each (runtime/faults.h plays them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/lab_model.h"
#include "scenario/scenario.h"

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

}  // namespace fabemu
