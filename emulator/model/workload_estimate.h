// How long a workload takes in the real fabric by the link model, before it runs: what a fault
// timeline is set against (a fault due after the workload's end is never played).
#pragma once

#include "model/lab_model.h"

namespace fabemu {

struct WorkloadEstimate {
  double real_s = 0;      // the steps whose length the model knows, in the real fabric's time
  int unknown_steps = 0;  // exec steps, and collectives over links without a rate: as long as
                          // their programs (or the CPU) take
};

// Collective steps: each size's iterations and fabemu-collective's warm-up iterations at the
// link model's predicted time (TCP's wire cost); incast steps: their duration; link steps:
// nothing. Ranks' start-up is not included.
WorkloadEstimate estimate_workload(const LabModel& m);

}  // namespace fabemu
