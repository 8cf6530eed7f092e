// The link model's units: a scenario LinkShape to and from the datapath's fabemu_link_cfg.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ebpf/dcqcn.h"
#include "ebpf/link_shaper.h"
#include "plan/plan.h"
#include "plan/port_params.h"
#include "scenario/scenario.h"

namespace fabemu {

// A probability (clamped to 0..1) as the datapath's fraction of 2^32, where 1 is
// FABEMU_PROB_ALWAYS.
uint32_t probability_u32(double p);
double probability_of(uint32_t p);

// The datapath config of one link direction. Unset fields mean "not limited" / "off", except
// the queue (kDefaultQueueNs when there is a rate). `policer`: the kernel has no fq, so the
// program polices a virtual queue instead of scheduling departures (no added delay).
fabemu_link_cfg to_cfg(const LinkShape& shape, uint64_t seed, bool policer);
// The same for a planned port: with PFC, its peer and the lab's lossless class.
fabemu_link_cfg to_cfg(const ShapePort& port);
// A host port's DCQCN parameters as its NIC's map entry (g as a fraction of FABEMU_DCQCN_ONE,
// the minimum rate at most the line rate).
fabemu_dcqcn_cfg to_dcqcn_cfg(const DcqcnParams& p);
// A switch's shared buffer as the datapath's entry (alpha in 1/FABEMU_BUFFER_ALPHA_ONE).
fabemu_buffer_cfg to_buffer_cfg(const SharedBufferParams& b);
// The buffer the far end of a PFC port keeps for it (fabemu_pfc_cfg[port.pfc_peer]).
fabemu_pfc_cfg pfc_buffer_cfg(const fabemu_link_cfg& cfg);

// Switches `cfg` from Bernoulli loss to Gilbert-Elliott.
void set_gilbert_elliott(fabemu_link_cfg& cfg, const BurstLoss& ge);

// What a config enforces, in scenario terms (for `status`): fields that are off stay unset.
LinkShape to_shape(const fabemu_link_cfg& cfg);

}  // namespace fabemu
