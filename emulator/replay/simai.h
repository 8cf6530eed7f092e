// SimAI's workload text (aliyun/SimAI, as AICB writes it; an extension of ASTRA-sim 1.0's):
//
//   HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus:
//   16 ...
//   2
//   attention  -1  1000  ALLREDUCE  4194304  1000  ALLREDUCE  4194304  1000  ALLREDUCE  8388608  10
//   mlp        -1  ...
//
// Line 1: the parallelism policy, then `key: value` pairs; line 2: the layer count; then one
// line per layer of twelve fields: name, reserved, forward compute, type, bytes, input-gradient
// compute, type, bytes, weight-gradient compute, type, bytes, update time. docs/replay.md says
// each field's unit and how the ranks run them.
#pragma once

#include <string>
#include <string_view>

#include "replay/program.h"
#include "util/result.h"

namespace fabemu::replay {

// SimAI's compute times are Ticks of its simulator: nanoseconds.
constexpr uint64_t kSimaiTickNs = 1;

// Every rank's operations for one iteration. Errors name `origin`, the line and the field:
// "model.txt:3: forward compute: 'x' is not a whole number".
Result<Program> read_simai(std::string_view text, const std::string& origin);

}  // namespace fabemu::replay
