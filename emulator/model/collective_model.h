// What the link model predicts for a collective: the algorithm's traffic as phases of
// concurrent flows between ranks, routed over the fabric (ECMP split evenly), each phase as long
// as its most loaded link direction needs. Pure: no kernel, no measurements.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/addressing.h"
#include "model/routing.h"
#include "model/topology.h"
#include "util/result.h"

namespace fabemu {

// One transfer within a phase: `share` of the collective's size S goes from rank src to dst.
struct Flow {
  int src = 0, dst = 0;
  double share = 0;
};

// Flows that run at the same time; the next phase starts when all of them are done.
struct Phase {
  std::vector<Flow> flows;
};

struct CollectivePattern {
  std::string collective;  // allreduce | allgather | reducescatter | alltoall | broadcast
  std::string algorithm;   // Gloo's: "ring_chunked", "ring", "halving_doubling", "pairwise", ...
  double bus_factor = 1;   // busbw = algbw * bus_factor (nccl-tests' conventions)
  std::vector<Phase> phases;
};

// The phases of Gloo's algorithm for `collective` over `ranks` ranks (S as nccl-tests size it:
// the full buffer for allreduce/broadcast, the total output for allgather, the total input for
// reducescatter and alltoall). Error for an unknown collective.
Result<CollectivePattern> collective_pattern(std::string_view collective, int ranks);

// Bytes a link carries per byte of payload, by transport. TCP: MSS-sized payload in an MTU
// frame, plus a delayed ACK per two segments on the way back. RoCEv2 (rxe): path-MTU payload
// with BTH/UDP/IP/Ethernet headers and ICRC; its ACKs are not modelled.
struct WireCost {
  double forward = 1;  // wire bytes per payload byte, in the data's direction
  double reverse = 0;  // wire bytes per payload byte, back (ACKs)
};
WireCost wire_cost(std::string_view transport, uint32_t mtu);

struct Prediction {
  // time(S) = latency_s + seconds_per_byte * S; seconds_per_byte is 0 when no link on the
  // collective's paths has a rate (the CPU, not the model, sets the speed then).
  double latency_s = 0;
  double seconds_per_byte = 0;
  double bus_factor = 1;
  std::string bottleneck;  // "h2>leaf1" of the longest phase, for reports
  // busbw in bytes/s at size S (0 when unbounded).
  double busbw(double size) const;
};

// Routes each phase's flows from the host of rank r (hosts in rank order) over the topology's
// routes, spreading over ECMP next hops evenly, and adds up each link direction's bytes (the
// reverse cost on the way back). A phase lasts max over directions of bytes / rate, plus the
// slowest path's delay.
Result<Prediction> predict(const Topology& topo, const AddressPlan& addresses,
                           const std::vector<std::vector<Route>>& routes,
                           const CollectivePattern& pattern, const WireCost& cost);
// The same with rank r on host node `hosts[r]` (a replay's group, placed).
Result<Prediction> predict(const Topology& topo, const AddressPlan& addresses,
                           const std::vector<std::vector<Route>>& routes,
                           const CollectivePattern& pattern, const WireCost& cost,
                           const std::vector<int>& hosts);

// {"allreduce": {"latency_s": .., "seconds_per_byte": .., "bus_factor": .., "algorithm": ..,
// "bottleneck": ..}, ...} for every collective: what `fabemu-collective --predict` reads.
std::string predictions_json(const Topology& topo, const AddressPlan& addresses,
                             const std::vector<std::vector<Route>>& routes,
                             std::string_view transport, uint32_t mtu);

}  // namespace fabemu
