// What a workload step measured: the collective benchmark's results per size and an incast's
// flows, as the report renders them (no system calls: the report layer reads these).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabemu {

// One result line of the collective benchmark (fabemu-collective --json-out), in the real
// fabric's time (the benchmark divides by the lab's time scale).
struct SizeResult {
  uint64_t size = 0;
  double time_us = 0, busbw_gbps = 0;
  double wall_time_us = 0;      // the same time on the lab's wall clock
  double pred_busbw_gbps = -1;  // -1: no prediction
  double pred_time_us = -1;
  uint64_t wrong = 0;
  std::vector<double> rank_time_us;
  std::vector<double> iteration_time_us;  // per timed iteration, its slowest rank's time
  // How the benchmark ran, as it says itself: "gloo"/"mpi", "tcp"/"ibverbs", its ranks, and
  // the time scale it divided its wall-clock figures by.
  std::string library, transport;
  int ranks = 0;
  double time_scale = 1;
  // busbw over the prediction; 0 without one.
  double ratio() const { return pred_busbw_gbps > 0 ? busbw_gbps / pred_busbw_gbps : 0; }
};

// Reads fabemu-collective's JSON lines ("type":"result" lines); unreadable lines are skipped.
std::vector<SizeResult> read_benchmark_results(const std::string& json_lines);

// One flow of an incast step: what the receiving end got, in the real fabric's units.
struct FlowResult {
  std::string role;  // "incast" or "victim"
  std::string from, to;
  double bps = 0;            // goodput received
  double fair_bps = 0;       // its max-min fair share (model/fair_share.h); 0: unlimited
  double lost = -1;          // udp: the fraction lost; -1: not udp
  uint64_t retransmits = 0;  // tcp: segments the sender retransmitted
  double stalled_s = 0;      // the end of the test in which nothing arrived (real fabric's s)
  std::string failure;       // empty when the flow ran
  // rdma: {cc: dcqcn}: the CNPs its sender's NIC took during the step; -1: no DCQCN.
  int64_t cnps = -1;
};

// Jain's fairness index of `x`: (sum x)^2 / (n sum x^2), 1 when all are equal, 1/n when one has
// everything; 0 for nothing.
double jain_index(const std::vector<double>& x);

// A note when a collective's busbw fell far below the model's prediction (`ratio` fields of
// fabemu-collective's JSON lines): then the machine, not the emulated fabric, set the speed.
std::string ratio_note(const std::string& json_lines);

}  // namespace fabemu
