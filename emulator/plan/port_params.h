// What a shaped port's qdisc must hold for a link shape: the default queue of a rate-limited
// link, fq's limits and, without fq, the htb class that holds the rate. Pure: planned once, and
// compared again when a live change grows a shape.
#pragma once

#include <cstdint>
#include <optional>

#include "scenario/scenario.h"

namespace fabemu {

// kDefaultQueueNs (scenario/scenario.h): the queue of a rate-limited link with neither limit.

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
// (htb sends a packet when its tokens are not negative and charges it after: a GSO super-frame
// goes at once, and the frames after it wait until it is paid for.)
std::optional<HtbParams> htb_params_for(const LinkShape& shape);

// The most frames in one skb that TCP may hand a shaped port: 1 (one wire frame per skb, so that a
// loss, a mark and a departure time each concern one frame) unless fabric.gso is on, then its
// size in full frames of the fabric's MTU.
uint32_t gso_max_segs_for(const FabricSpec& fabric);

}  // namespace fabemu
