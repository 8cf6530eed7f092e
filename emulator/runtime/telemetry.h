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
#include "results/order.h"
#include "results/telemetry.h"
#include "shaping/link_shaper.h"

namespace fabemu {

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
  // A sample read now, on the calling thread, and not kept: the bounds of one step.
  TelemetrySample mark();
  // The balancers' flow order and path changes and the local hosts' TCP counters, read now on
  // the calling thread (runtime/flow_order.cpp).
  OrderSnapshot order();
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
