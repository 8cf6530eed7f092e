// Reading the `workload` and `faults` sections of a scenario. Internal to the loader.
#pragma once

#include <cstdint>
#include <vector>

#include "scenario/scenario.h"
#include "scenario/yaml_field.h"

namespace fabemu::detail {

std::vector<WorkloadStep> read_workload(const Field& list, uint32_t mtu,
                                        const TimeScaleSpec& scale);

// `mtu` is the fabric's, for the link shapes that faults set.
std::vector<FaultEvent> read_faults(const Field& list, uint32_t mtu);

Expectations read_expect(const Field& f);

// A replay step's workload: SimAI's text at `path`, or Chakra's PREFIX.<rank>.et traces.
Result<replay::Program> read_replay_program(const std::string& path, const std::string& format,
                                            const std::string& comm_groups);

}  // namespace fabemu::detail
