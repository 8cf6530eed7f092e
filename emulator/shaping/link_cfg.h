// The link model's units: a scenario LinkShape to and from the datapath's fabemu_link_cfg.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ebpf/link_shaper.h"
#include "scenario/scenario.h"

namespace fabemu {

// A rate-limited link with neither queue limit gets this one. Deep enough for TCP at the rates
// emulated here, and it keeps an unresponsive flood from pushing departures seconds ahead (which
// `fq` would drop past its horizon) or from making a policer let through an unbounded burst.
inline constexpr uint64_t kDefaultQueueNs = 10'000'000;

// A probability (clamped to 0..1) as the datapath's fraction of 2^32, where 1 is
// FABEMU_PROB_ALWAYS.
uint32_t probability_u32(double p);
double probability_of(uint32_t p);

// The datapath config of one link direction. Unset fields mean "not limited" / "off", except
// the queue (kDefaultQueueNs when there is a rate). `policer`: the kernel has no fq, so the
// program polices a virtual queue instead of scheduling departures (no added delay).
fabemu_link_cfg to_cfg(const LinkShape& shape, uint64_t seed, bool policer);

// Switches `cfg` from Bernoulli loss to Gilbert-Elliott.
void set_gilbert_elliott(fabemu_link_cfg& cfg, const BurstLoss& ge);

// What a config enforces, in scenario terms (for `status`): fields that are off stay unset.
LinkShape to_shape(const fabemu_link_cfg& cfg);

// The fq qdisc under a shaped port releases each packet at the departure time the program
// gave it. Its limits must hold every packet the link model lets wait: a port holds up to
// (queue + delay + jitter) of traffic, and fq's defaults (100 packets per flow) would drop an
// elephant flow's packets long before the emulated queue is full.
struct FqParams {
  uint64_t horizon_ns = 0;  // departures further ahead are dropped (a guard, not a shape)
  uint32_t limit = 0;       // packets in the qdisc
  uint32_t flow_limit = 0;  // packets of one flow
  bool operator==(const FqParams&) const = default;
};

// Limits for a port shaped like `shape`, never below generous defaults so that live changes
// within them need no qdisc change.
FqParams fq_params_for(const LinkShape& shape);

// Without fq, an htb class can still hold a link's rate with a real queue (the policer alone
// drops what a queue would delay, and TCP through it collapses). The program keeps its virtual
// queue at the same rate for tail drop, ECN and counters; htb's FIFO is deeper, so the program,
// not htb, decides drops.
struct HtbParams {
  uint64_t rate_bps = 0;     // wire bits per second, as the program counts them
  uint64_t burst_bytes = 0;  // what htb may send back to back
  uint32_t limit_bytes = 0;  // its FIFO
  bool operator==(const HtbParams&) const = default;
};

// htb for a port shaped like `shape`; unset when the shape has no rate (nothing to hold).
std::optional<HtbParams> htb_params_for(const LinkShape& shape);

// splitmix64: one step of the generator (x + golden ratio, then the finalizer). Seeds and the
// fault timeline's jitter come from it.
uint64_t splitmix64(uint64_t x);

// The seed of one link direction ("leaf1>spine2"), derived from the scenario's seed so that every
// link has its own loss sequence and a run repeats.
uint64_t link_seed(uint64_t scenario_seed, std::string_view direction);

}  // namespace fabemu
