// fabric.load_balance, and a workload step's load_balance, from YAML (docs/load-balancing.md).
// Internal to the loader.
#pragma once

#include <vector>

#include "scenario/scenario.h"
#include "scenario/yaml_field.h"

namespace fabemu::detail {

struct LoadBalanceSetting {
  LoadBalance lb;  // `default`, or the one mode given
  std::vector<LoadBalanceOverride> overrides;
};

// A mode (ecmp, flowlet, spray, adaptive; a word, or one of them mapped to its parameters), or
// a map of `default` and tiers or switches to modes. Fails naming the field.
LoadBalanceSetting read_load_balance(const Field& f);

}  // namespace fabemu::detail
