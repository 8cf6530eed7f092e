// LinkShape <-> fabemu_link_cfg: clamping, defaults, probabilities as fractions of 2^32.
#include "shaping/link_cfg.h"

#include <algorithm>
#include <cmath>

namespace fabemu {

namespace {

// The datapath clamps to the same bound; clamping here too makes the stored config say what is
// enforced.
constexpr uint64_t kMaxRateBps = 1ULL << 60;

}  // namespace

uint32_t probability_u32(double p) {
  if (!(p > 0)) return 0;  // also NaN
  if (p >= 1) return FABEMU_PROB_ALWAYS;
  double scaled = std::round(std::ldexp(p, 32));
  // Just below 1 rounds up to 2^32: keep it a probability, not certainty.
  if (scaled >= static_cast<double>(FABEMU_PROB_ALWAYS)) return FABEMU_PROB_ALWAYS - 1;
  return static_cast<uint32_t>(scaled);
}

double probability_of(uint32_t p) {
  return p == FABEMU_PROB_ALWAYS ? 1.0 : std::ldexp(static_cast<double>(p), -32);
}

static_assert(kPfcXoffDynamic == FABEMU_PFC_XOFF_DYNAMIC);

fabemu_link_cfg to_cfg(const LinkShape& shape, uint64_t seed, bool policer) {
  fabemu_link_cfg cfg{};
  cfg.rate_bps = std::min(shape.rate_bps.value_or(0), kMaxRateBps);
  cfg.delay_ns = shape.delay_ns.value_or(0);
  cfg.jitter_ns = shape.jitter_ns.value_or(0);
  cfg.queue_ns = shape.queue_ns.value_or(0);
  cfg.queue_bytes = shape.queue_bytes.value_or(0);
  if (cfg.rate_bps && !cfg.queue_ns && !cfg.queue_bytes) cfg.queue_ns = kDefaultQueueNs;
  cfg.ecn_threshold_ns = shape.ecn_threshold_ns.value_or(0);
  cfg.ecn_threshold_bytes = shape.ecn_threshold_bytes.value_or(0);
  if (shape.ecn && shape.ecn->kmax_bytes) {
    // The datapath's bound on byte limits (2 GiB): no buffer is larger.
    cfg.ecn_kmin_bytes = uint32_t(std::min<uint64_t>(shape.ecn->kmin_bytes, 1ULL << 31));
    cfg.ecn_kmax_bytes = uint32_t(std::min<uint64_t>(shape.ecn->kmax_bytes, 1ULL << 31));
    cfg.ecn_pmax = probability_u32(shape.ecn->pmax);
  }
  cfg.loss = probability_u32(shape.loss.value_or(0));
  if (shape.loss_burst) set_gilbert_elliott(cfg, *shape.loss_burst);
  cfg.corrupt = probability_u32(shape.corrupt.value_or(0));
  cfg.duplicate = probability_u32(shape.duplicate.value_or(0));
  cfg.seed = seed;
  if (shape.down.value_or(false)) cfg.flags |= FABEMU_LINK_DOWN;
  if (!shape.reorder.value_or(true)) cfg.flags |= FABEMU_LINK_NO_REORDER;
  if (policer) cfg.flags |= FABEMU_LINK_POLICER;
  if (shape.pfc) {
    cfg.pfc_xoff_bytes = shape.pfc->xoff_bytes;
    cfg.pfc_xon_bytes = shape.pfc->xon_bytes;
    cfg.pfc_watchdog_ns = shape.pfc->watchdog_ns;
  }
  return cfg;
}

fabemu_link_cfg to_cfg(const ShapePort& port) {
  fabemu_link_cfg cfg = to_cfg(port.shape, port.seed, port.policer);
  if (!port.pfc_qdisc.empty()) cfg.flags |= FABEMU_LINK_PFC_QUEUE;
  if (port.keep_hash) cfg.flags |= FABEMU_LINK_KEEP_HASH;
  if (port.dcqcn) cfg.flags |= FABEMU_LINK_DCQCN;
  if (port.buffer) {
    cfg.buffer_id = port.buffer->id;
    // The switch's buffer is the port's queue, unless the link has one of its own too.
    if (!port.shape.queue_ns && !port.shape.queue_bytes) cfg.queue_ns = 0;
  }
  cfg.lossless_udp_port = port.lossless.udp_port;
  for (int d : port.lossless.dscp) cfg.lossless_dscp |= 1ULL << (d & 63);
  if (port.pfc_peer && cfg.pfc_xoff_bytes) {
    cfg.pfc_peer = port.pfc_peer;
    // The buffer's bytes leave in slots of an eighth of Xoff's drain time at the link's rate,
    // so that FABEMU_PFC_SLOTS of them see four times Xoff drain (an incast's backlog).
    const uint64_t drain_ns =
        cfg.rate_bps ? static_cast<uint64_t>(static_cast<long double>(cfg.pfc_xoff_bytes) * 8e9L /
                                             static_cast<long double>(cfg.rate_bps))
                     : 0;
    cfg.pfc_slot_ns = std::max<uint64_t>(drain_ns / 8, 1000);
    // xoff: dynamic: the far switch's buffer's slots (a host's: it never pauses, any will do).
    if (port.shape.pfc && port.shape.pfc->dynamic())
      cfg.pfc_slot_ns = port.pfc_buffer ? port.pfc_buffer->slot_ns : 1000;
  } else {
    cfg.pfc_xoff_bytes = cfg.pfc_xon_bytes = cfg.pfc_watchdog_ns = 0;
  }
  return cfg;
}

fabemu_dcqcn_cfg to_dcqcn_cfg(const DcqcnParams& p) {
  // g and alpha as the datapath's fractions of FABEMU_DCQCN_ONE, never 0.
  auto fraction = [](double x) {
    return uint32_t(
        std::clamp<double>(std::round(x * double(FABEMU_DCQCN_ONE)), 1, double(FABEMU_DCQCN_ONE)));
  };
  fabemu_dcqcn_cfg c{};
  c.line_bps = std::min<uint64_t>(p.line_bps, kMaxRateBps);
  c.min_bps = std::min<uint64_t>(p.min_bps, c.line_bps);
  c.ai_bps = p.ai_bps;
  c.hai_bps = p.hai_bps;
  c.alpha_ns = p.alpha_ns;
  c.decrease_ns = p.decrease_ns;
  c.rp_timer_ns = p.rp_timer_ns;
  c.cnp_interval_ns = p.cnp_interval_ns;
  c.g = fraction(p.g);
  c.fast_recovery = p.fast_recovery;
  c.clamp_target = p.clamp_target;
  c.byte_counter = p.byte_counter;
  c.initial_alpha = fraction(p.initial_alpha);
  return c;
}

fabemu_buffer_cfg to_buffer_cfg(const SharedBufferParams& b) {
  fabemu_buffer_cfg c{};
  c.bytes = b.bytes;
  c.slot_ns = b.slot_ns;
  c.alpha = uint32_t(std::clamp<double>(std::round(b.alpha * FABEMU_BUFFER_ALPHA_ONE), 1,
                                        64.0 * FABEMU_BUFFER_ALPHA_ONE));
  return c;
}

fabemu_pfc_cfg pfc_buffer_cfg(const fabemu_link_cfg& cfg) {
  return {cfg.pfc_xoff_bytes, cfg.pfc_xon_bytes, cfg.pfc_slot_ns, 0, 0};
}

void set_gilbert_elliott(fabemu_link_cfg& cfg, const BurstLoss& ge) {
  cfg.flags |= FABEMU_LINK_GE;
  cfg.loss = 0;
  cfg.ge_p = probability_u32(ge.p);
  cfg.ge_r = probability_u32(ge.r);
  cfg.ge_loss_bad = probability_u32(ge.loss_bad);
  cfg.ge_loss_good = probability_u32(ge.loss_good);
}

LinkShape to_shape(const fabemu_link_cfg& cfg) {
  LinkShape s;
  auto set = [](std::optional<uint64_t>& field, uint64_t v) {
    if (v) field = v;
  };
  set(s.rate_bps, cfg.rate_bps);
  set(s.delay_ns, cfg.delay_ns);
  set(s.jitter_ns, cfg.jitter_ns);
  set(s.queue_ns, cfg.queue_ns);
  set(s.queue_bytes, cfg.queue_bytes);
  set(s.ecn_threshold_ns, cfg.ecn_threshold_ns);
  set(s.ecn_threshold_bytes, cfg.ecn_threshold_bytes);
  if (cfg.ecn_kmax_bytes)
    s.ecn = RedEcn{cfg.ecn_kmin_bytes, cfg.ecn_kmax_bytes, probability_of(cfg.ecn_pmax)};
  if (cfg.flags & FABEMU_LINK_GE) {
    s.loss_burst = BurstLoss{probability_of(cfg.ge_p), probability_of(cfg.ge_r),
                             probability_of(cfg.ge_loss_bad), probability_of(cfg.ge_loss_good)};
  } else if (cfg.loss) {
    s.loss = probability_of(cfg.loss);
  }
  if (cfg.corrupt) s.corrupt = probability_of(cfg.corrupt);
  if (cfg.duplicate) s.duplicate = probability_of(cfg.duplicate);
  if (cfg.flags & FABEMU_LINK_DOWN) s.down = true;
  if (cfg.flags & FABEMU_LINK_NO_REORDER) s.reorder = false;
  if (cfg.pfc_xoff_bytes)
    s.pfc = PfcShape{cfg.pfc_xoff_bytes, cfg.pfc_xon_bytes, cfg.pfc_watchdog_ns};
  return s;
}

}  // namespace fabemu
