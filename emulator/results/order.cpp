// Flows' order at their last hop and the hosts' TCP reaction, over a step.
#include "results/order.h"

#include <algorithm>
#include <sstream>

namespace fabemu {

TcpCounters& TcpCounters::operator+=(const TcpCounters& o) {
  out_segs += o.out_segs;
  retrans_segs += o.retrans_segs;
  reorder_seen += o.reorder_seen;
  dsacks += o.dsacks;
  return *this;
}

namespace {

// "Prefix: name name ...\nPrefix: value value ..." pairs as "Prefix.name" -> value.
std::map<std::string, uint64_t> proc_net_table(const std::string& text) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(text);
  std::string names, values;
  while (std::getline(in, names) && std::getline(in, values)) {
    std::istringstream n(names), v(values);
    std::string prefix, vprefix, name, value;
    n >> prefix;
    v >> vprefix;
    if (prefix != vprefix || prefix.empty()) continue;
    prefix.pop_back();  // the colon
    while (n >> name && v >> value) {
      // Tcp MaxConn is -1: not a counter, and not one read here.
      if (value.empty() || value[0] == '-') continue;
      out[prefix + "." + name] = std::stoull(value);
    }
  }
  return out;
}

}  // namespace

TcpCounters parse_tcp_counters(const std::string& snmp, const std::string& netstat) {
  auto s = proc_net_table(snmp);
  auto n = proc_net_table(netstat);
  TcpCounters c;
  c.out_segs = s["Tcp.OutSegs"];
  c.retrans_segs = s["Tcp.RetransSegs"];
  c.reorder_seen =
      n["TcpExt.TCPSACKReorder"] + n["TcpExt.TCPTSReorder"] + n["TcpExt.TCPRenoReorder"];
  c.dsacks = n["TcpExt.TCPDSACKRecv"] + n["TcpExt.TCPDSACKOfoRecv"];
  return c;
}

StepOrder order_growth(const OrderSnapshot& before, const OrderSnapshot& after) {
  StepOrder o;
  auto grew = [](uint64_t a, uint64_t b) { return b >= a ? b - a : b; };
  for (const auto& [flow, f] : after.flows) {
    FlowOrder d{flow, f.frames, f.reordered};
    if (auto it = before.flows.find(flow);
        it != before.flows.end() && f.frames >= it->second.frames) {
      d.frames -= it->second.frames;
      d.reordered = grew(it->second.reordered, f.reordered);
    }
    if (!d.frames) continue;
    ++o.flows;
    o.frames += d.frames;
    o.reordered += d.reordered;
    if (d.reordered) {
      ++o.flows_reordered;
      o.worst.push_back(std::move(d));
    }
  }
  std::sort(o.worst.begin(), o.worst.end(), [](const FlowOrder& a, const FlowOrder& b) {
    return a.reordered != b.reordered ? a.reordered > b.reordered : a.flow < b.flow;
  });
  if (o.worst.size() > StepOrder::kWorstFlows) o.worst.resize(StepOrder::kWorstFlows);
  o.moves = grew(before.moves, after.moves);
  o.down_skips = grew(before.down_skips, after.down_skips);
  o.no_member = grew(before.no_member, after.no_member);
  o.tcp.out_segs = grew(before.tcp.out_segs, after.tcp.out_segs);
  o.tcp.retrans_segs = grew(before.tcp.retrans_segs, after.tcp.retrans_segs);
  o.tcp.reorder_seen = grew(before.tcp.reorder_seen, after.tcp.reorder_seen);
  o.tcp.dsacks = grew(before.tcp.dsacks, after.tcp.dsacks);
  return o;
}

Json order_json(const StepOrder& o) {
  Json worst = Json::array();
  for (const auto& f : o.worst)
    worst.push_back({{"flow", f.flow}, {"frames", f.frames}, {"reordered", f.reordered}});
  return {{"flows", o.flows},
          {"flows_reordered", o.flows_reordered},
          {"frames", o.frames},
          {"reordered", o.reordered},
          {"worst", worst},
          {"moves", o.moves},
          {"down_skips", o.down_skips},
          {"no_member", o.no_member},
          {"tcp",
           {{"out_segs", o.tcp.out_segs},
            {"retrans_segs", o.tcp.retrans_segs},
            {"reorder_seen", o.tcp.reorder_seen},
            {"dsacks", o.tcp.dsacks}}}};
}

}  // namespace fabemu
