// fq and htb sizing from a link shape: how long its emulated queue holds a packet.
#include "plan/port_params.h"

#include <algorithm>

namespace fabemu {
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

uint32_t gso_max_segs_for(const FabricSpec& fabric) {
  if (!fabric.gso_bytes) return 1;
  constexpr uint32_t kTcpIpHeaders = 52;  // IPv4 and TCP with timestamps
  return std::max<uint32_t>(2, fabric.gso_bytes / (fabric.mtu - kTcpIpHeaders));
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

}  // namespace fabemu
