// The order in which flows' frames reached their last hop, the balancers' path changes and the
// hosts' TCP reaction, over one step: what spraying and adaptive routing cost the transport.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/json.h"

namespace fabemu {

// The hosts' TCP counters that answer reordering (summed over hosts).
struct TcpCounters {
  uint64_t out_segs = 0;      // Tcp OutSegs
  uint64_t retrans_segs = 0;  // Tcp RetransSegs
  // Reordering TCP detected (TcpExt TCPSACKReorder + TCPTSReorder + TCPRenoReorder) and
  // DSACKs it received (TCPDSACKRecv + TCPDSACKOfoRecv): a retransmission was spurious.
  uint64_t reorder_seen = 0, dsacks = 0;
  TcpCounters& operator+=(const TcpCounters& o);
};

// One namespace's TCP counters from its /proc/net/snmp and /proc/net/netstat.
TcpCounters parse_tcp_counters(const std::string& snmp, const std::string& netstat);

// One flow's frames at its last hop: "h1:40312>h9:5201" (TCP) or "h1>h9 qp 0x11" (RoCEv2).
struct FlowOrder {
  std::string flow;
  uint64_t frames = 0, reordered = 0;
};

// Cumulative counters at one time.
struct OrderSnapshot {
  std::map<std::string, FlowOrder> flows;  // by flow
  uint64_t moves = 0, down_skips = 0, no_member = 0;
  TcpCounters tcp;
};

// Over one step.
struct StepOrder {
  // Flows counted at their last hop (a balancing switch's host port), their frames, and the
  // frames that arrived below the next expected sequence number (RFC 4737's reordered).
  uint64_t flows = 0, flows_reordered = 0, frames = 0, reordered = 0;
  std::vector<FlowOrder> worst;  // the most reordered first, at most kWorstFlows
  static constexpr size_t kWorstFlows = 5;
  // The balancers: a flow or frame took another member than its flow's last; the chosen
  // member was down and another took the frame; every member was down.
  uint64_t moves = 0, down_skips = 0, no_member = 0;
  TcpCounters tcp;
};

// The growth from `before` to `after` (a flow the map forgot meanwhile counts from zero).
StepOrder order_growth(const OrderSnapshot& before, const OrderSnapshot& after);

// A step's order as JSON: report.jsonl's `order` records without their type and step.
Json order_json(const StepOrder& o);

}  // namespace fabemu
