// The measurement loop: per size, fill, barrier, time one collective, check every element.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "collective/communicator.h"
#include "collective/pattern.h"
#include "util/result.h"

namespace fabemu::collective {

struct BenchmarkConfig {
  int iterations = 20;
  int warmup = 2;
  double time_scale = 1;  // wall seconds per real second (time dilation)
  // Seconds of this process's clock per real second: time_scale, or 1 on the fabric's clock
  // (clock_scale in options.h).
  double clock_scale = 1;
};

struct SizeResult {
  Layout layout;
  std::string algorithm;
  int iterations = 0;
  int warmup = 0;
  // Each rank's mean time of one timed iteration, and their maximum (the time column), in the
  // real fabric's time (the wall clock's / the time scale); and the maximum as the wall clock
  // saw it.
  std::vector<double> rank_time_us;
  // Each timed iteration's time on its slowest rank (every iteration starts at a barrier), in
  // the real fabric's time: where a fault or a stall struck, the mean hides it.
  std::vector<double> iteration_time_us;
  double time_us = 0;
  double wall_time_us = 0;
  double algbw = 0;  // GB/s: size / time
  double busbw = 0;  // GB/s: algbw * bus_factor
  // Wrong elements over every iteration (warmup included), per rank and in total; every rank
  // has the same numbers.
  std::vector<uint64_t> rank_wrong;
  uint64_t wrong = 0;
  // This rank's first wrong element and its iteration, for its own error message.
  Verification local;
  int local_iteration = -1;
  // From the prediction file, when it has this collective.
  std::optional<double> pred_time_us;
  std::optional<double> pred_busbw;
  std::optional<double> ratio() const {
    if (!pred_busbw || *pred_busbw <= 0) return std::nullopt;
    return busbw / *pred_busbw;
  }
};

// Runs `c` at `requested_bytes` (rounded as layout_of says) on every rank of `comm`. Only the
// collective itself is timed: filling, the barrier before and the check after are not.
Result<SizeResult> run_size(Communicator& comm, Collective c, uint64_t requested_bytes,
                            const BenchmarkConfig& config);

}  // namespace fabemu::collective
