// The incast workload step: every sender at once to one receiver (iperf3 TCP or UDP, or
// ib_write_bw over rxe), with an optional victim flow, each flow's goodput read back in the
// real fabric's units beside its max-min fair share.
#pragma once

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/workload.h"

namespace fabemu {

// Runs `step` (workload step `index`): servers first, every client at once when they all
// listen, then reads their reports; the flows' table in the result (`table`), not printed.
StepResult run_incast(const LabModel& m, const LabPaths& paths, size_t index,
                      const IncastStep& step, std::chrono::seconds timeout);

// What a receiver's link delivered while data was arriving, in the real fabric's bit/s, from
// samples of (wall seconds, bytes received so far): the bytes from the last sample at 1% of the
// growth to the first at 99% over the time between them (the tools' connection set-up before it
// and a straggler after it do not stretch the window; an incast whose flows all stall within it
// shows as the idle link it is). `factor`: the lab's dilation. 0 when nothing arrived.
double received_rate(const std::vector<std::pair<double, uint64_t>>& samples, double factor);

}  // namespace fabemu
