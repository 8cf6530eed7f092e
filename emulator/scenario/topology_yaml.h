// Reading the `topology` section of a scenario. Internal to the loader.
#pragma once

#include <cstdint>

#include "scenario/scenario.h"
#include "scenario/yaml_field.h"

namespace fabemu::detail {

// `mtu` is the fabric's, for the link shapes a topology may carry.
TopologySpec read_topology(const Field& topology, uint32_t mtu);

}  // namespace fabemu::detail
