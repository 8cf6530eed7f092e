// Looking at a running lab with other people's tools: a port's frames for pcapng readers
// (`capture`), and the lab's counters read again and again for an exporter or a live view
// (`LabWatch`: `metrics`, `top`). Reading only; nothing here changes a lab.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "plan/lab_paths.h"
#include "plan/plan.h"
#include "report/pcapng.h"
#include "results/telemetry.h"
#include "runtime/capture.h"
#include "util/result.h"

namespace fabemu {
class TelemetrySampler;
}

namespace fabemu::session {

// ---- capture --------------------------------------------------------------------------------

// Where a capture target is: "a:b" a link at a's port (both directions), "a>b" one direction at
// a's port, "NODE:IFNAME" a port by its interface name.
struct CaptureTarget {
  int node = -1;
  std::string ifname;
  bool out_only = false;
  // The directions seen, in the order of the capture's handles (sent, then received), and the
  // pcapng interfaces that name them.
  std::vector<PcapngInterface> interfaces;
};
Result<CaptureTarget> resolve_capture_target(const LabModel& m, const std::string& target);

// The lab's time in the real fabric's units: the lab's epoch (when `up` set its time scale)
// plus the wall time since it divided by the time scale. A capture's frames are stamped so
// (unless `wall`: as the kernel stamped them); `metrics` and `top` count from the epoch.
struct FabricClock {
  int64_t epoch_ns = 0;  // CLOCK_REALTIME
  double factor = 1;
  bool wall = false;
  // The real fabric's nanoseconds since the epoch at wall time `wall_ns`.
  double since_epoch_ns(int64_t wall_ns) const { return double(wall_ns - epoch_ns) / factor; }
  uint64_t stamp(uint64_t wall_ns) const;
};

struct CaptureRequest {
  std::string lab, target;
  CaptureOptions options;
  bool wall = false;  // timestamps as the kernel stamped them
};

// What the front end writes frames to; begin() comes once, before the first frame.
class CaptureSink {
 public:
  virtual ~CaptureSink() = default;
  virtual bool begin(const CaptureTarget& t, const FabricClock& clock) = 0;
  // `iface`: the index into the target's interfaces; false ends the capture (a closed pipe).
  virtual bool frame(uint32_t iface, uint64_t ts_ns, std::span<const uint8_t> data,
                     uint32_t original_length) = 0;
};

// Captures until the request's count or time, the sink's refusal, or `interrupt`.
Result<CaptureStats> capture(const CaptureRequest& req, const LabPaths& base, CaptureSink& sink,
                             const std::atomic<int>* interrupt);

// ---- watching the counters ------------------------------------------------------------------

// One read of a lab's counters (runtime/telemetry's sample, in the real fabric's units) with
// what a live view also shows.
struct LabReading {
  TelemetrySample sample;   // wall_s, t_s: on the monotonic clock (only differences count)
  double fabric_s = 0;      // the real fabric's seconds since the lab's epoch
  double read_seconds = 0;  // how long the read took (wall)
  std::string error;        // the first part that could not be read, if any
  std::string step;         // the step `run` is playing now ("" when none)
};

// A lab opened once (its model, the link model's pinned maps) and read on demand.
class LabWatch {
 public:
  static Result<std::unique_ptr<LabWatch>> open(const std::string& lab, const LabPaths& base);
  ~LabWatch();
  LabReading read();
  const LabModel& model() const { return model_; }
  const LabPaths& paths() const { return paths_; }
  std::string shaping() const { return shaping_; }  // fq, htb or policer (the run dir's record)
  bool local(size_t dir) const;                     // the direction leaves this machine's node
  bool gone() const;                                // the lab was taken down meanwhile

 private:
  LabWatch() = default;
  LabPaths paths_;
  LabModel model_;
  std::string shaping_;
  FabricClock clock_;
  std::unique_ptr<TelemetrySampler> sampler_;
};

}  // namespace fabemu::session
