// `fabemu top`'s frame: the busiest directions between two reads of a lab's counters (rates in
// the real fabric's units), links down, the step playing; plain lines, so that a terminal
// library, a pipe or a test can show them.
#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"
#include "results/telemetry.h"

namespace fabemu {

struct TopInput {
  const LabModel& model;
  const TelemetrySample& before;  // the previous read (the same as `now` on the first frame)
  const TelemetrySample& now;
  std::string lab, shaping, step, error;
  double fabric_s = 0;      // the real fabric's seconds since the lab's epoch
  double read_seconds = 0;  // how long `now` took to read
  std::vector<bool> local;  // per direction: this machine's to show
};

// At most `rows` lines of directions (busiest first) under a header, each cut to `width`.
std::vector<std::string> top_frame(const TopInput& in, size_t rows, size_t width);

}  // namespace fabemu
