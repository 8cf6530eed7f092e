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

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

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

fabemu_link_cfg to_cfg(const LinkShape& shape, uint64_t seed, bool policer) {
  fabemu_link_cfg cfg{};
  cfg.rate_bps = std::min(shape.rate_bps.value_or(0), kMaxRateBps);
  cfg.delay_ns = shape.delay_ns.value_or(0);
  cfg.jitter_ns = shape.jitter_ns.value_or(0);
  cfg.queue_ns = shape.queue_ns.value_or(0);
  cfg.queue_bytes = shape.queue_bytes.value_or(0);
  if (cfg.rate_bps && !cfg.queue_ns && !cfg.queue_bytes) cfg.queue_ns = kDefaultQueueNs;
  cfg.ecn_threshold_ns = shape.ecn_threshold_ns.value_or(0);
  cfg.loss = probability_u32(shape.loss.value_or(0));
  if (shape.loss_burst) set_gilbert_elliott(cfg, *shape.loss_burst);
  cfg.seed = seed;
  if (shape.down.value_or(false)) cfg.flags |= FABEMU_LINK_DOWN;
  if (!shape.reorder.value_or(true)) cfg.flags |= FABEMU_LINK_NO_REORDER;
  if (policer) cfg.flags |= FABEMU_LINK_POLICER;
  return cfg;
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
  if (cfg.flags & FABEMU_LINK_GE) {
    s.loss_burst = BurstLoss{probability_of(cfg.ge_p), probability_of(cfg.ge_r),
                             probability_of(cfg.ge_loss_bad), probability_of(cfg.ge_loss_good)};
  } else if (cfg.loss) {
    s.loss = probability_of(cfg.loss);
  }
  if (cfg.flags & FABEMU_LINK_DOWN) s.down = true;
  if (cfg.flags & FABEMU_LINK_NO_REORDER) s.reorder = false;
  return s;
}

namespace {

// The longest the emulated queue holds a packet: its time limit, or its byte limit at the
// link's rate, whichever is longer; kDefaultQueueNs for a rate-limited link with neither.
uint64_t emulated_queue_ns(const LinkShape& shape) {
  uint64_t queue_ns = shape.queue_ns.value_or(0);
  if (shape.rate_bps && *shape.rate_bps && shape.queue_bytes)
    queue_ns = std::max<uint64_t>(queue_ns, static_cast<uint64_t>(double(*shape.queue_bytes) * 8e9 /
                                                                  double(*shape.rate_bps)));
  if (shape.rate_bps && !shape.queue_ns && !shape.queue_bytes) queue_ns = kDefaultQueueNs;
  return queue_ns;
}

}  // namespace

FqParams fq_params_for(const LinkShape& shape) {
  // The longest a packet waits in fq: the emulated queue, then propagation and jitter.
  const uint64_t queue_ns = emulated_queue_ns(shape);
  const uint64_t hold_ns = queue_ns + shape.delay_ns.value_or(0) + 2 * shape.jitter_ns.value_or(0);
  // Packets in that time at the link's rate (100 Gbit/s when unlimited: more than a veth carries),
  // counted at 256 bytes: ACK-heavy mixes are smaller than MTU frames.
  constexpr double kUnlimitedBps = 100e9, kPacketBits = 256 * 8;
  const double bps = shape.rate_bps && *shape.rate_bps ? double(*shape.rate_bps) : kUnlimitedBps;
  const double packets = double(hold_ns) * 1e-9 * bps / kPacketBits;
  constexpr double kMinPackets = 100'000, kMaxPackets = 1 << 24;
  FqParams p;
  p.limit = static_cast<uint32_t>(std::clamp(packets * 2, kMinPackets, kMaxPackets));
  p.flow_limit = p.limit;  // one elephant flow may fill the emulated queue on its own
  constexpr uint64_t kMinHorizonNs = 10'000'000'000;  // fq's own default
  p.horizon_ns = std::max(kMinHorizonNs, 2 * hold_ns);
  return p;
}

std::optional<HtbParams> htb_params_for(const LinkShape& shape) {
  if (!shape.rate_bps || !*shape.rate_bps) return std::nullopt;
  const double bytes_per_s = double(*shape.rate_bps) / 8;
  const uint64_t queue_ns = emulated_queue_ns(shape);
  HtbParams p;
  p.rate_bps = *shape.rate_bps;
  // Two frames, or 100 us of the rate: small enough to keep the queue where the program models
  // it, large enough that htb's timer does not cost rate.
  constexpr uint64_t kFrame = 1514 + 24;
  p.burst_bytes = std::max<uint64_t>(2 * kFrame, static_cast<uint64_t>(bytes_per_s * 100e-6));
  // Twice the emulated queue, at least 1 MB: the program drops first.
  const double queue_bytes =
      std::max(double(queue_ns) * 1e-9 * bytes_per_s, double(shape.queue_bytes.value_or(0)));
  p.limit_bytes = static_cast<uint32_t>(std::clamp(2 * queue_bytes, 1e6, 1e9));
  return p;
}

uint64_t link_seed(uint64_t scenario_seed, std::string_view direction) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a: stable across builds, unlike std::hash
  for (unsigned char c : direction) h = (h ^ c) * 0x100000001b3ULL;
  return splitmix64(scenario_seed ^ splitmix64(h));
}

}  // namespace fabemu
