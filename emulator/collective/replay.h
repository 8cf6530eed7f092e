// One rank of a replayed training step (replay/program.h): its streams run at once, each in
// issue order (compute as a wait of the recorded time, dilated; each group's collectives and
// sends on that group's communicator, with the recorded sizes), every operation after what it
// waits for. The first iteration is a warm-up whose every output element is checked; the
// timed ones after it are measured.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "replay/program.h"
#include "replay/schedule.h"
#include "util/result.h"

namespace fabemu::collective {

struct ReplayConfig {
  int iterations = 1;      // timed, after the warm-up
  double clock_scale = 1;  // this process's seconds per real second (options.h's clock_scale)
};

// The communicator of group g for this rank (only groups it belongs to are asked, in order).
using GroupConnector = std::function<Result<std::unique_ptr<Communicator>>(int group)>;

// `world` holds every rank (its barrier starts each iteration).
Result<replay::RankRecord> run_replay(const replay::Program& p, int rank, Communicator& world,
                                      const GroupConnector& connect, const ReplayConfig& config);

}  // namespace fabemu::collective
