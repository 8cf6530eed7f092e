// What a replayed training step measured (runtime/replay_step.h runs it), beside the link
// model's prediction of the same iteration; the report writes it out.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "replay/program.h"
#include "replay/schedule.h"

namespace fabemu {

struct ReplayResult {
  std::shared_ptr<const replay::Program> program;
  std::vector<std::string> placement;  // the host of each rank
  double time_scale = 1;
  uint64_t checked = 0, wrong = 0;                   // elements checked in the warm-up iteration
  std::vector<replay::IterationSummary> iterations;  // timed, in the real fabric's time
  std::optional<replay::IterationSummary> model;     // none: the model could not say
  std::string model_error;
  replay::Timeline first;  // the first timed iteration: every rank's operations
};

}  // namespace fabemu
