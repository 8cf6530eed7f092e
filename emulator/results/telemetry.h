// Telemetry samples of a run: each direction's cumulative counters and each host's rxe
// counters at one time (runtime/telemetry.h samples them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fabemu {

// Cumulative counters of one direction at one time.
struct DirectionSample {
  // Shaped: the bytes the link had serialized by the read (as a real port counts them when
  // they leave: admitted minus its queue then), so that rates never run ahead of the link;
  // unshaped: the port's kernel tx bytes.
  uint64_t bytes = 0;
  uint64_t packets = 0;       // admitted (shaped) or sent (unshaped)
  uint64_t queued_bytes = 0;  // shaped: in the link model's queue at the read
  uint64_t drops = 0, ce_marks = 0;
  // Of `drops`, by cause (the link model's; an unshaped port's kernel drops have none): the
  // link down, random loss, the queue full, PFC's watchdog.
  uint64_t drop_down = 0, drop_loss = 0, drop_queue = 0, drop_watchdog = 0;
  // When these counters were read, since the workload started, in the real fabric's time;
  // negative when unknown (then the sample's t_s stands).
  double t_s = -1;
  // Of everything counted so far (histogram upper bound), in the real fabric's time.
  uint64_t queue_delay_p99_ns = 0;
  // PFC: how long the lossless class was held back (the real fabric's time), pauses begun.
  uint64_t pause_ns = 0, pause_events = 0;
  uint64_t lossless_drops = 0;  // of `drops`, frames of the lossless class
  bool shaped = false;          // counters from the link model; else the port's kernel tx
  // Shaped: frames of the lossless class (PFC's), the link's rate now (the real fabric's bit/s)
  // and whether it is down (the link model drops everything).
  uint64_t lossless_packets = 0, rate_bps = 0;
  bool down = false;
  bool operator==(const DirectionSample&) const = default;
};

// One QP at one time, as its sender's DCQCN reaction point paces it (rdma: {cc: dcqcn}).
struct QpSample {
  std::string host;       // the sender
  std::string peer;       // the receiver's address
  uint32_t qpn = 0;       // the destination QP its frames carry
  uint64_t rate_bps = 0;  // now, in the real fabric's units
  uint64_t cnps = 0;      // taken so far
  bool operator==(const QpSample&) const = default;
};

struct TelemetrySample {
  double t_s = 0;     // since the workload started, in the real fabric's time
  double wall_s = 0;  // the same on the wall clock (N times longer in a dilated lab)
  std::vector<DirectionSample> dirs;                           // index 2 * link + (b_to_a ? 1 : 0)
  std::map<std::string, std::map<std::string, uint64_t>> rxe;  // host -> hw counter -> value
  std::vector<QpSample> qps;                                   // DCQCN's QPs (rdma: {cc: dcqcn})
  std::map<std::string, uint64_t> buffers;  // switch -> shared buffer bytes in use
};

}  // namespace fabemu
