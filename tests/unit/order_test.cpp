// The flows' order over a step and the hosts' TCP counters (results/order.h).
#include "results/order.h"

#include <gtest/gtest.h>

namespace fabemu {
namespace {

TEST(Order, TcpCountersComeFromSnmpAndNetstat) {
  const std::string snmp =
      "Ip: Forwarding DefaultTTL\nIp: 1 64\n"
      "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens OutSegs RetransSegs\n"
      "Tcp: 1 200 120000 -1 4 1000 7\n";
  const std::string netstat =
      "TcpExt: SyncookiesSent TCPSACKReorder TCPTSReorder TCPRenoReorder TCPDSACKRecv "
      "TCPDSACKOfoRecv\nTcpExt: 0 3 2 1 5 1\n"
      "IpExt: InNoRoutes\nIpExt: 0\n";
  const TcpCounters c = parse_tcp_counters(snmp, netstat);
  EXPECT_EQ(c.out_segs, 1000u);
  EXPECT_EQ(c.retrans_segs, 7u);
  EXPECT_EQ(c.reorder_seen, 6u);
  EXPECT_EQ(c.dsacks, 6u);
  EXPECT_EQ(parse_tcp_counters("", "").out_segs, 0u);  // a namespace without TCP: zeros
}

TEST(Order, AStepCountsWhatGrewAndNamesTheWorstFlows) {
  OrderSnapshot before, after;
  before.flows["h1:1>h2:2"] = {"h1:1>h2:2", 100, 5};
  after.flows["h1:1>h2:2"] = {"h1:1>h2:2", 300, 25};  // 200 frames, 20 reordered
  after.flows["h3:1>h4:2"] = {"h3:1>h4:2", 50, 30};   // new in this step
  before.flows["h5:1>h6:2"] = {"h5:1>h6:2", 10, 0};
  after.flows["h5:1>h6:2"] = {"h5:1>h6:2", 10, 0};  // idle in this step: not counted
  // Forgotten by the map and seen again: counts from zero.
  before.flows["h7:1>h8:2"] = {"h7:1>h8:2", 900, 9};
  after.flows["h7:1>h8:2"] = {"h7:1>h8:2", 40, 1};
  before.moves = 10;
  after.moves = 110;
  before.tcp.out_segs = 1000;
  after.tcp.out_segs = 1500;
  after.tcp.retrans_segs = 3;
  const StepOrder o = order_growth(before, after);
  EXPECT_EQ(o.flows, 3u);
  EXPECT_EQ(o.frames, 290u);
  EXPECT_EQ(o.reordered, 51u);
  EXPECT_EQ(o.flows_reordered, 3u);
  ASSERT_EQ(o.worst.size(), 3u);
  EXPECT_EQ(o.worst[0].flow, "h3:1>h4:2");
  EXPECT_EQ(o.worst[1].flow, "h1:1>h2:2");
  EXPECT_EQ(o.worst[1].frames, 200u);
  EXPECT_EQ(o.moves, 100u);
  EXPECT_EQ(o.tcp.out_segs, 500u);
  EXPECT_EQ(o.tcp.retrans_segs, 3u);
  const Json j = order_json(o);
  EXPECT_EQ(j["reordered"], 51);
  EXPECT_EQ(j["worst"][0]["flow"], "h3:1>h4:2");
  EXPECT_EQ(j["tcp"]["out_segs"], 500);
}

}  // namespace
}  // namespace fabemu
