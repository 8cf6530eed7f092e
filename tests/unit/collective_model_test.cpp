// The collective model against hand-computed bandwidths: ring, one-to-all and all-to-all on
// leaf-spine fabrics, with ECMP spreading and oversubscription.
#include "model/collective_model.h"

#include <gtest/gtest.h>

#include "fake_lab.h"

#include "plan/plan.h"
#include "scenario/loader.h"

namespace fabemu {
namespace {

using unit::model_of;

Prediction predict_for(const LabModel& m, const char* collective, const char* transport = "tcp") {
  auto p = collective_pattern(collective, m.topo.host_count());
  EXPECT_TRUE(p.ok());
  auto pr = predict(m.topo, m.addresses, m.routes, *p, wire_cost(transport, 1500));
  EXPECT_TRUE(pr.ok()) << (pr.ok() ? "" : pr.error().what());
  return *pr;
}

const char* kLeafSpine200 = R"(name: t
topology: {kind: leaf-spine, leaves: 4, spines: 2, hosts_per_leaf: 2}
links: {default: {rate: 200mbit}}
)";

TEST(WireCost, TcpCountsFramesAndAcks) {
  const WireCost c = wire_cost("tcp", 1500);
  EXPECT_DOUBLE_EQ(c.forward, 1514.0 / 1448.0);
  EXPECT_DOUBLE_EQ(c.reverse, 66.0 / 2896.0);
  // A 1500-byte netdev fits RoCE path MTU 1024.
  EXPECT_DOUBLE_EQ(wire_cost("ibverbs", 1500).forward, (1024.0 + 58.0) / 1024.0);
  EXPECT_DOUBLE_EQ(wire_cost("ibverbs", 4200).forward, (4096.0 + 58.0) / 4096.0);
}

TEST(CollectiveModel, RingAllreduceRunsAtTheHostLinkRate) {
  const LabModel m = model_of(kLeafSpine200);
  const Prediction p = predict_for(m, "allreduce");
  const WireCost c = wire_cost("tcp", 1500);
  // Each host's uplink carries its data to the next rank and the ACKs of the previous rank's.
  const double expect = 200e6 / 8 / (c.forward + c.reverse);
  EXPECT_NEAR(p.busbw(1e12), expect, expect * 1e-6);
  EXPECT_DOUBLE_EQ(p.bus_factor, 2.0 * 7 / 8);
  EXPECT_EQ(p.latency_s, 0);
}

TEST(CollectiveModel, BroadcastIsLimitedByTheRootsUplink) {
  const LabModel m = model_of(kLeafSpine200);
  const Prediction p = predict_for(m, "broadcast");
  const WireCost c = wire_cost("tcp", 1500);
  const double expect = 200e6 / 8 / c.forward / 7;
  EXPECT_NEAR(p.busbw(1e12), expect, expect * 1e-6);
  EXPECT_EQ(p.bottleneck, "h1>leaf1");
}

TEST(CollectiveModel, OversubscribedUplinkBoundsAlltoall) {
  // 4 hosts under each leaf at 200 Mbit/s, one 200 Mbit/s uplink: 4:1.
  const LabModel m = model_of(R"(name: t
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 4}
links: {default: {rate: 200mbit}}
)");
  const Prediction p = predict_for(m, "alltoall");
  const WireCost c = wire_cost("tcp", 1500);
  // Per byte of S, each leaf's uplink carries 4 hosts x 4 remote peers x S/8, plus the ACKs of
  // the other leaf's 16 flows.
  const double per_s = 16.0 / 8 * (c.forward + c.reverse);
  const double expect = 7.0 / 8 / (per_s * 8 / 200e6);
  EXPECT_NEAR(p.busbw(1e12), expect, expect * 1e-6);
  EXPECT_EQ(p.bottleneck.find(">spine1") != std::string::npos, true) << p.bottleneck;
}

TEST(CollectiveModel, EcmpSplitsCrossLeafTrafficOverSpines) {
  // Only the spine links are slow: a ring crossing leaves spreads each flow over both spines.
  const LabModel m = model_of(R"(name: t
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
links: {default: {rate: 10gbit}, leaf-spine: {rate: 100mbit}}
)");
  const Prediction p = predict_for(m, "allgather", "ibverbs");
  // 2 ranks: one phase, each rank sends S/2 to the other; half of it over each spine.
  const double spb = 0.5 * 0.5 * wire_cost("ibverbs", 1500).forward * 8 / 100e6;
  EXPECT_NEAR(p.seconds_per_byte, spb, spb * 1e-9);
}

TEST(CollectiveModel, DelayAddsLatencyPerPhase) {
  const LabModel m = model_of(R"(name: t
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
links: {default: {rate: 1gbit, delay: 100us}}
)");
  const Prediction p = predict_for(m, "allreduce");
  // 2 ranks: 2 phases, each crossing 4 links of 100 us.
  EXPECT_NEAR(p.latency_s, 2 * 400e-6, 1e-12);
}

TEST(CollectiveModel, UnshapedLinksPredictNothing) {
  const LabModel m = model_of(
      "name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, "
      "hosts_per_leaf: 2}\n");
  EXPECT_EQ(predict_for(m, "allreduce").busbw(1e6), 0);
  EXPECT_FALSE(collective_pattern("allfoo", 4).ok());
}

TEST(CollectiveModel, JsonHasEveryCollective) {
  const LabModel m = model_of(kLeafSpine200);
  const std::string j = predictions_json(m.topo, m.addresses, m.routes, "tcp", 1500);
  for (const char* c : {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"})
    EXPECT_NE(j.find(std::string("\"") + c + "\""), std::string::npos) << j;
  EXPECT_NE(j.find("seconds_per_byte"), std::string::npos);
}

TEST(CollectivePattern, ReduceScatterIsGloosHalvingDoubling) {
  auto p = collective_pattern("reducescatter", 8);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->algorithm, "halving_doubling");
  // Three halving steps (partners at distance 1, 2, 4), then the bit-reversed owners.
  ASSERT_EQ(p->phases.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    for (const Flow& f : p->phases[i].flows) {
      EXPECT_EQ(f.dst, f.src ^ (1 << i));
      EXPECT_DOUBLE_EQ(f.share, 1.0 / (2 << i));
    }
  }
  // bitrev3: 1<->4, 3<->6; 0, 2, 5, 7 keep theirs.
  EXPECT_EQ(p->phases[3].flows.size(), 4u);
  double per_rank = 0;
  for (const Phase& ph : p->phases)
    for (const Flow& f : ph.flows)
      if (f.src == 1) per_rank += f.share;
  EXPECT_DOUBLE_EQ(per_rank, 7.0 / 8 + 1.0 / 8);
  // Not a power of two: the ring's bytes.
  EXPECT_EQ(collective_pattern("reducescatter", 6)->phases.size(), 5u);
}

}  // namespace
}  // namespace fabemu
