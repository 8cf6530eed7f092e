// The incast workload step: every sender at once to one receiver (iperf3 TCP or UDP, or
// ib_write_bw over rxe), with an optional victim flow, each flow's goodput read back in the
// real fabric's units beside its max-min fair share.
#pragma once

#include <chrono>

#include "runtime/workload.h"

namespace fabemu {

// Runs `step` (workload step `index`): servers first, every client at once when they all
// listen, then reads their reports; the flows' table in the result (`table`), not printed.
StepResult run_incast(const LabModel& m, const LabPaths& paths, size_t index,
                      const IncastStep& step, std::chrono::seconds timeout);

}  // namespace fabemu
