// A deliberate layering violation: a file of the model layer that includes the plan layer
// above it. The `layers.upward_include_fails` test builds it and expects the compiler to say
// that plan/plan.h does not exist for it.
#include "model/topology.h"
#include "plan/plan.h"

namespace fabemu {
int layering_violation() {
  return kFirstPortIfindex;
}
}  // namespace fabemu
