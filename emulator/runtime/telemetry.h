// Telemetry of a run: per link direction bytes, packets, drops, CE marks and queue delay, and
// per host rxe counters, sampled on a thread of its own while the workload runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "plan/plan.h"
#include "shaping/link_shaper.h"

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
  bool operator==(const DirectionSample&) const = default;
};

struct TelemetrySample {
  double t_s = 0;     // since the workload started, in the real fabric's time
  double wall_s = 0;  // the same on the wall clock (N times longer in a dilated lab)
  std::vector<DirectionSample> dirs;                           // index 2 * link + (b_to_a ? 1 : 0)
  std::map<std::string, std::map<std::string, uint64_t>> rxe;  // host -> hw counter -> value
};

// One direction's sample from the link model's reading of its port, in the real fabric's
// units (`t_s` left to the caller, who knows when the workload started).
DirectionSample shaped_sample(const PortSnapshot& p, const TimeScale& scale);

// Samples every `interval` from start() until stop(); one sample at each end as well. Each
// direction's read is timestamped, so that a rate is computed over the time between two reads
// of that direction, however long the whole round took or was delayed.
class TelemetrySampler {
 public:
  TelemetrySampler(const LabModel& model, const LabPaths& paths,
                   std::chrono::milliseconds interval);
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  void start(std::chrono::steady_clock::time_point t0);
  void stop();
  std::vector<TelemetrySample> samples() const;
  std::string error() const;  // the first failure to read, if any (sampling goes on)
  // The most a read of one shaped direction can miss of what the link serialized: a frame on
  // each CPU still being counted (PortSnapshot); 0 without the link model's maps.
  uint64_t slack_bytes() const;

 private:
  TelemetrySample take();
  const LabModel& model_;
  const LabPaths& paths_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point t0_;
  std::optional<LinkShaper> maps_;  // opened once: loading them verifies the program
  std::vector<TelemetrySample> samples_;
  std::string error_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;  // waits end early when the thread is asked to stop
  std::jthread thread_;
};

}  // namespace fabemu
