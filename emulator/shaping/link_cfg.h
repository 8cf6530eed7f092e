// The link model's units: a scenario LinkShape to and from the datapath's fabemu_link_cfg.
#pragma once

#include <cstdint>
#include <string_view>

#include "ebpf/link_shaper.h"
#include "scenario/scenario.h"

namespace fabemu {

// A rate-limited link with neither queue limit gets this one. Deep enough for TCP at the rates
// emulated here, and it keeps an unresponsive flood from pushing departures seconds ahead (which
// `fq` would drop past its horizon) or from making a policer let through an unbounded burst.
inline constexpr uint64_t kDefaultQueueNs = 10'000'000;

// Gilbert-Elliott burst loss; probabilities per packet, 0..1.
struct GilbertElliott {
  double p = 0;          // good -> bad
  double r = 1;          // bad -> good (mean burst length 1/r packets)
  double loss_bad = 1;   // drop probability in the bad state
  double loss_good = 0;  // drop probability in the good state
};

// A probability (clamped to 0..1) as the datapath's fraction of 2^32, where 1 is
// FABEMU_PROB_ALWAYS.
uint32_t probability_u32(double p);
double probability_of(uint32_t p);

// The datapath config of one link direction. Unset fields mean "not limited" / "off", except
// the queue (kDefaultQueueNs when there is a rate). `policer`: the kernel has no fq, so the
// program polices a virtual queue instead of scheduling departures (no added delay).
fabemu_link_cfg to_cfg(const LinkShape& shape, uint64_t seed, bool policer);

// Switches `cfg` from Bernoulli loss to Gilbert-Elliott.
void set_gilbert_elliott(fabemu_link_cfg& cfg, const GilbertElliott& ge);

// What a config enforces, in scenario terms (for `status`): fields that are off stay unset.
LinkShape to_shape(const fabemu_link_cfg& cfg);

// The seed of one link direction ("leaf1>spine2"), derived from the scenario's seed so that every
// link has its own loss sequence and a run repeats.
uint64_t link_seed(uint64_t scenario_seed, std::string_view direction);

}  // namespace fabemu
