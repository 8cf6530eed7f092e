// How much emulated traffic this machine carries in real time: a small lab (8 hosts, two
// leaves, two spines) runs a Gloo allreduce at rising link rates until its busbw falls more than
// 5% below the link model's prediction; the last rate that kept pace, as frame-hops per second
// (model/time_scale.h), is the machine's capacity. `time_scale: auto` divides a lab's demand by
// it. The doctor keeps it for the rest of the boot, as the rxe verdict (doctor/system_probe.h:
// the session hands this to it as its Calibrator, since measuring runs a lab).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "model/time_scale.h"
#include "plan/plan.h"
#include "runtime/workload.h"
#include "util/result.h"

namespace fabemu {

struct CalibrationSetup {
  LabPaths base;             // run_root, netns_dir...; the lab's name is chosen here
  PlanOptions plan;          // the link model's mode on this kernel (fq, htb or policer)
  WorkloadOptions workload;  // where fabemu and fabemu-collective are
  std::function<void(const std::string&)> progress;  // one line per trial, for people
  uint32_t gso_bytes = 0;  // the lab's fabric.gso (CapacityKind::Gso): 0, one frame per skb
};

// Builds the calibration lab, measures, takes it down (also on failure). Needs root.
Result<Capacity> calibrate(const CalibrationSetup& setup);

}  // namespace fabemu
