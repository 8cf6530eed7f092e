// A replay step (scenario.h's ReplayStep): ranks placed on hosts, the memory they need checked
// against the machine's, fabemu-collective --replay in every host of a rank, their timelines
// read back; and the link model's prediction of the same iteration.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "runtime/workload.h"

namespace fabemu {

// The host node of each rank: the step's placement, or by default rank r on the r-th host in
// the topology's order (consecutive hosts share a leaf; on a rail-optimized fabric, a
// machine's GPUs, so a tensor-parallel group no larger than a machine stays in its scale-up
// domain).
Result<std::vector<int>> replay_hosts(const LabModel& m, const ReplayStep& s);

// "placement: rank 0-7 on h1-h8 ...; tp groups within one switch: 2 of 2": for the terminal,
// before the step runs.
std::string describe_placement(const LabModel& m, const ReplayStep& s);

// The iteration by the link model over `topo` (the lab's, with its live shapes): compute as
// recorded, each collective as the model predicts it on its placed hosts.
Result<replay::IterationSummary> predict_replay(const LabModel& m, const Topology& topo,
                                                const ReplayStep& s, const std::string& transport);

StepResult run_replay_step(const LabModel& m, const LabPaths& paths, size_t index,
                           const ReplayStep& s, const WorkloadOptions& o,
                           std::chrono::seconds timeout);

}  // namespace fabemu
