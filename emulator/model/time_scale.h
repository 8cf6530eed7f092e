// Time dilation (Gupta et al., NSDI'06): the scenario describes the real fabric, and the lab
// runs it N times slower — every rate / N, every delay, jitter and time-denominated limit x N,
// byte limits unchanged — so that bandwidth-delay products, queue depths in bytes and packet
// counts are the real fabric's, and every time measured in the lab is N times the real one.
// These are the conversions between the two clocks; everything people read is in real units.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "scenario/scenario.h"

namespace fabemu {

// The most a lab is dilated: beyond this, a second of the real fabric is days of wall clock.
inline constexpr double kMaxTimeScale = 1e6;

struct TimeScale {
  double factor = 1;  // wall seconds per real second; 1: no dilation

  bool dilated() const { return factor != 1; }
  // Real -> wall.
  uint64_t wall_ns(uint64_t real_ns) const;
  uint64_t wall_bps(uint64_t real_bps) const;  // at least 1 bit/s
  double wall_s(double real_s) const { return real_s * factor; }
  // Wall -> real.
  double real_s(double wall_s) const { return wall_s / factor; }
  double real_ns(double wall_ns) const { return wall_ns / factor; }
  double real_bps(double wall_bps) const { return wall_bps * factor; }
  uint64_t real_bps_exact(uint64_t wall_bps) const;
  uint64_t real_ns_exact(uint64_t wall_ns) const;
};

// "4000", "2.5": the factor as people read it.
std::string format_factor(double factor);

// The shape a port gets for a real link shaped like `real`: rate / N; delay, jitter, queue time
// and ECN threshold x N; queue bytes, loss, reorder and down as they are.
LinkShape to_wall(const LinkShape& real, const TimeScale& t);
// The real fabric's shape of a port shaped like `wall`.
LinkShape to_real(const LinkShape& wall, const TimeScale& t);

}  // namespace fabemu

namespace fabemu {

struct LabModel;

// What a lab asks of the machine in real time (factor 1): every host sending at its NIC's rate,
// every frame (of the fabric's MTU) crossing the hops of an average path between two hosts, in
// frame-hops per second. Emulation costs CPU per frame and hop, so this, over what the machine
// carries, is the factor the lab must be dilated by. Unset when a host link has no rate.
std::optional<double> lab_demand(const LabModel& m);

// What a calibration lab sends: one frame per skb (plain), or TCP's GSO super-frames through
// the fabric (fabric.gso, docs/scenario.md), which carries several times the frames. Measured
// and kept apart; a lab's time scale divides by the one of its kind.
enum class CapacityKind { Plain, Gso };
inline CapacityKind capacity_kind(const FabricSpec& f) {
  return f.gso_bytes ? CapacityKind::Gso : CapacityKind::Plain;
}
// "plain", "gso": the names in the kept file and in `doctor` ("capacity", "capacity_gso").
const char* to_string(CapacityKind k);
// The super-frame size a Gso calibration lab uses.
inline constexpr uint32_t kCalibrationGsoBytes = 65536;

// What this machine carries while a collective keeps pace with the link model, found by
// calibration (runtime/calibrate.h), in the same frame-hops per wall second.
struct Capacity {
  double frame_hops_per_s = 0;
  // What the machine adds to each step of a collective (a ring allreduce's send-and-receive)
  // across 8 hosts, in wall seconds: scheduling 8 ranks and their stacks on its CPUs.
  double step_overhead_s = 0;
  uint64_t link_bps = 0;  // the calibration lab's highest link rate that kept pace
  double ratio = 0;       // busbw / model there
  int hosts = 0;          // of the calibration lab
  std::string detail;     // what was measured, for `doctor` and `up`
};

// The factor that makes the machine's per-step overhead (over `hosts`/8 more ranks to schedule)
// at most 5% of the shortest collective step of the lab's workload: its smallest size split
// among its hosts, at the hosts' link rate. 1 without collectives or rates.
double latency_time_scale(const LabModel& m, const Capacity& c);

// The smallest readable factor (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 x 10^k) of at least
// `need`, and 1 below 1.
double readable_factor(double need);
// readable_factor(demand / capacity): 1 when the machine carries the lab in real time.
double auto_time_scale(double demand, double capacity);

}  // namespace fabemu
