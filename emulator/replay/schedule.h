// A replayed iteration's timeline, measured by the ranks or predicted: when each operation of
// each rank ran, and what that makes of the iteration (its time, each pass's and layer's, the
// communication that compute did not hide, each collective's bus bandwidth).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "replay/program.h"

namespace fabemu::replay {

struct Span {
  int64_t start_ns = 0, end_ns = 0;  // from the iteration's start
  int64_t ns() const { return end_ns - start_ns; }
};

// Each rank's operations (Program::ranks' shape).
using Timeline = std::vector<std::vector<Span>>;

// How long an operation takes once it can start (for a collective or a send: once every rank
// of it can), in the real fabric's ns.
using Duration = std::function<double(int rank, const Op& op)>;

// The iteration as the ranks would run it (program.h's streams: each in issue order, an
// operation after what it waits for; a collective starts when its last member gets to it, a
// send and its receive together). Error when the program cannot finish (a wait in a circle).
Result<Timeline> simulate(const Program& p, const Duration& duration);

// That the program can finish: played with every operation taking 1 ns (the readers ask, so
// that ranks whose collectives on different groups wait for each other in a circle are refused
// before anything runs).
Result<void> check_finishes(const Program& p);

struct CollectiveFigure {
  std::string what;      // describe_op's words
  double time_ns = 0;    // the slowest member's time in it, averaged over its instances
  double busbw_Bps = 0;  // nccl-tests' busbw at that time
  int count = 0;         // instances per iteration (of this kind, size and group)
};

struct IterationSummary {
  double iteration_ns = 0;  // the last operation's end on any rank
  int slowest_rank = 0;
  // The slowest rank's time spent computing, and the rest of its iteration: communication
  // (or waiting for a peer) that compute did not hide.
  double compute_ns = 0;
  double exposed_comm_ns = 0;
  // The slowest rank's span of each pass (first start to last end) and each layer's busy time
  // per pass, in the program's order.
  std::map<std::string, double> pass_ns;
  std::vector<std::pair<std::string, std::map<std::string, double>>> layer_ns;
  std::vector<CollectiveFigure> collectives;
};

IterationSummary summarize(const Program& p, const Timeline& t);

// For people: the passes' spans ("forward 7.34ms, input_gradient 10.8ms, ..."), and with them
// the slowest rank and its compute and exposed communication ("slowest rank 4: forward ...;
// compute 17.1ms, communication exposed 2.05ms").
std::string describe_passes(const IterationSummary& s);
std::string describe_iteration(const IterationSummary& s);

// What one rank measured (fabemu-collective --replay writes it, the lab reads every rank's).
struct RankRecord {
  int rank = 0;
  // Per timed iteration: when it started (CLOCK_REALTIME over the clock scale: a clock the ranks
  // of one machine share) and each operation's span from there, in the real fabric's ns.
  std::vector<int64_t> start_ns;
  std::vector<std::vector<Span>> ops;
  uint64_t checked = 0;  // elements checked in the warm-up
  uint64_t wrong = 0;
  std::string first_wrong;  // "allreduce 16MiB on tp [0-7] (layer x): element 3 got 1, expected 2"
};

// {"rank": 3, "start_ns": [...], "ops": [[[s, e], ...], ...], "checked": .., "wrong": ..}
std::string record_json(const RankRecord& r);
Result<RankRecord> parse_record_json(const std::string& text, const std::string& origin);

// Timed iteration k of every rank's record (records[r] is rank r's), on one timeline: each
// rank's spans moved by its start's offset from the earliest.
Timeline iteration_timeline(const std::vector<RankRecord>& records, size_t k);

}  // namespace fabemu::replay
