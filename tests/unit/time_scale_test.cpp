// Time dilation without a kernel: conversions, what the plan gives ports and hosts, the
// scenario keys, the demand and the auto factor.
#include "model/time_scale.h"

#include <gtest/gtest.h>

#include "doctor/capabilities.h"
#include "fake_lab.h"
#include "plan/plan.h"

namespace fabemu {
namespace {

using unit::load;

TEST(TimeScale, ShapesGoToTheWallAndBackInTheUnitsPeopleWrote) {
  const TimeScale t{4000};
  LinkShape real;
  real.rate_bps = 400'000'000'000;
  real.delay_ns = 1'000;
  real.jitter_ns = 200;
  real.queue_bytes = 4'000'000;
  real.queue_ns = 50'000;
  real.ecn_threshold_ns = 10'000;
  real.loss = 0.01;
  const LinkShape wall = to_wall(real, t);
  EXPECT_EQ(wall.rate_bps, 100'000'000u);
  EXPECT_EQ(wall.delay_ns, 4'000'000u);
  EXPECT_EQ(wall.jitter_ns, 800'000u);
  EXPECT_EQ(wall.queue_ns, 200'000'000u);
  EXPECT_EQ(wall.ecn_threshold_ns, 40'000'000u);
  EXPECT_EQ(wall.queue_bytes, 4'000'000u);  // bytes are the real fabric's
  EXPECT_EQ(wall.loss, 0.01);
  EXPECT_EQ(to_real(wall, t), real);
  // A factor that does not divide the rate still reads back as written.
  LinkShape odd;
  odd.rate_bps = 25'000'000'000;
  EXPECT_EQ(to_real(to_wall(odd, TimeScale{3}), TimeScale{3}).rate_bps, 25'000'000'000u);
  EXPECT_EQ(to_wall(real, TimeScale{1}), real);
}

TEST(TimeScale, AutoRoundsUpToAReadableFactor) {
  EXPECT_EQ(auto_time_scale(10, 20), 1);
  EXPECT_EQ(auto_time_scale(100, 100), 1);
  EXPECT_EQ(auto_time_scale(101, 100), 1.2);
  EXPECT_EQ(auto_time_scale(230, 100), 2.5);
  EXPECT_EQ(auto_time_scale(260, 100), 3);
  EXPECT_EQ(auto_time_scale(1234, 1), 1500);
  EXPECT_EQ(auto_time_scale(2910, 1), 3000);
  EXPECT_EQ(auto_time_scale(7000, 1), 8000);
  EXPECT_EQ(auto_time_scale(1e12, 1), kMaxTimeScale);
}

// `yaml` with `from` replaced by `to`.
std::string with(std::string yaml, const std::string& from, const std::string& to) {
  yaml.replace(yaml.find(from), from.size(), to);
  return yaml;
}

constexpr const char* k400g = R"(name: ai
time_scale: 4000
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 4}
fabric: {mtu: 4200}
hosts: {tcp_rto_min: 1ms}
links:
  default: {rate: 400gbit, delay: 1us, queue: 4M, ecn_threshold: 10us}
telemetry: {interval: 100us}
)";

TEST(TimeScale, TheDemandIsHostsTimesRateTimesAveragePathOverFrames) {
  auto m = build_model(load(k400g), 0);
  ASSERT_TRUE(m);
  // 8 hosts; from each, 3 others under its leaf (2 hops) and 4 under the other (4 hops).
  const double hops = (3 * 2 + 4 * 4) / 7.0;
  const double frames = 400e9 / (8.0 * (4200 + 38));
  EXPECT_NEAR(*lab_demand(*m), 8 * frames * hops, 1);
  auto unrated = build_model(
      load("name: u\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}\n"), 0);
  EXPECT_FALSE(lab_demand(*unrated));
}

// A rail-optimized server's GPUs also send through its scale-up switch (two hops), at that
// link's rate: a replayed step's tensor-parallel collectives run there.
TEST(TimeScale, TheDemandCountsTheScaleUpLinksToo) {
  auto m = build_model(load("name: r\ntopology: {kind: rail-optimized, nodes: 2, gpus_per_node: 2, "
                            "spines: 1, scale_up: {rate: 1600gbit}}\nfabric: {mtu: 4200}\n"
                            "links: {default: {rate: 400gbit}}\n"),
                       0);
  ASSERT_TRUE(m) << m.error().what();
  const double frame_bits = 8.0 * (4200 + 38);
  // Rails: from each GPU, 1 other on its rail leaf (2 hops), 2 on the other rail (4 hops).
  const double rails = 4 * 400e9 / frame_bits * (2 + 2 * 4) / 3.0;
  const double scale_up = 4 * 1600e9 / frame_bits * 2;
  EXPECT_NEAR(*lab_demand(*m), rails + scale_up, 1);
}

TEST(TimeScale, PortsRunDilatedHostsDilateTheirRtoAndTheRunDirKeepsTheFactor) {
  auto m = build_model(load(k400g), 0);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->time_scale.factor, 4000);
  LabPaths paths;
  paths.lab = "ai";
  PlanOptions o;
  Plan plan = make_plan(*m, paths, 0, o);
  int ports = 0, host_routes = 0;
  bool kept = false;
  for (const Action& a : plan.actions) {
    if (const auto* p = std::get_if<ShapePort>(&a)) {
      ++ports;
      EXPECT_EQ(p->shape.rate_bps, 100'000'000u);
      EXPECT_EQ(p->shape.delay_ns, 4'000'000u);
      EXPECT_EQ(p->shape.queue_bytes, 4u << 20);
      EXPECT_EQ(p->fq, fq_params_for(p->shape));  // sized for what the port holds
    }
    if (const auto* r = std::get_if<AddRoute>(&a); r && r->ns.find("-h") != std::string::npos) {
      ++host_routes;
      EXPECT_EQ(r->rto_min_ms, 4000u);  // 1ms real
    }
    if (const auto* w = std::get_if<WriteFile>(&a); w && w->path == paths.time_scale_file()) {
      kept = true;
      LabModel back = *m;
      back.time_scale = {};
      ASSERT_TRUE(parse_time_scale(w->content, w->path, back));
      EXPECT_EQ(back.time_scale.factor, 4000);
      EXPECT_EQ(back.time_scale_why, "time_scale in the scenario");
    }
  }
  EXPECT_EQ(ports, 2 * 12);
  EXPECT_EQ(host_routes, 8);
  EXPECT_TRUE(kept);
  // Linux's 200ms when the scenario names none, at most the kernel's 120 s.
  auto plain = build_model(load(with(k400g, "hosts: {tcp_rto_min: 1ms}\n", "")), 0);
  ASSERT_TRUE(plain);
  EXPECT_EQ(host_rto_min_ms(*plain), std::optional<uint32_t>(120'000));
  plain->time_scale.factor = 100;
  EXPECT_EQ(host_rto_min_ms(*plain), std::optional<uint32_t>(20'000));
  plain->time_scale.factor = 1;
  EXPECT_FALSE(host_rto_min_ms(*plain));  // real time: the kernel's own
}

TEST(TimeScale, ScenarioKeysAreCheckedWithTheirPlace) {
  auto bad = [](const std::string& yaml) {
    auto s = load_scenario_string(
        "name: x\ntopology: {kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 1}\n" + yaml,
        "t.yaml");
    return s ? std::string() : s.error().message;
  };
  EXPECT_EQ(bad("time_scale: auto\n"), "");
  EXPECT_EQ(bad("time_scale: 2.5\n"), "");
  EXPECT_NE(bad("time_scale: 0.5\n").find("t.yaml:3:13: time_scale: "), std::string::npos);
  EXPECT_NE(bad("time_scale: fast\n").find("time_scale"), std::string::npos);
  EXPECT_NE(bad("hosts: {tcp_rto_min: 10us}\n").find("1ms..120s"), std::string::npos);
  EXPECT_NE(bad("telemetry: {interval: 0s}\n").find("interval must be > 0"), std::string::npos);
  EXPECT_NE(bad("telemetry: {every: 1s}\n").find("unknown key"), std::string::npos);
}

// A probe that only knows the machine's capacity.
struct CapacityProbe : KernelProbe {
  std::optional<Capacity> kept, measured;
  int calibrations = 0;
  std::vector<CapacityKind> kinds;  // asked for
  Capability fq() override { return {ProbeStatus::Yes, ""}; }
  Capability htb() override { return {ProbeStatus::Yes, ""}; }
  LinkModelCapability link_model() override { return {}; }
  Capability pfc_qdisc() override { return {}; }
  Capability ovs_kernel() override { return {}; }
  Capability ovs_userspace() override { return {}; }
  Capability rxe() override { return {}; }
  Capability cgroup(const std::string&) override { return {}; }
  std::optional<std::vector<std::string>> congestion_controls() override { return {}; }
  Capability ecmp_seed() override { return {}; }
  std::optional<Capacity> capacity(bool measure, std::string& why, CapacityKind kind) override {
    kinds.push_back(kind);
    if (kept) return kept;
    if (!measure) return std::nullopt;
    ++calibrations;
    if (!measured) why = "calibration failed: no collective";
    return measured;
  }
};

TEST(TimeScale, AutoDividesTheDemandByTheCalibratedCapacity) {
  auto m = build_model(load(with(k400g, "time_scale: 4000", "time_scale: auto")), 0);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->time_scale.factor, 1);  // `up` decides auto
  CapacityProbe p;
  p.measured = Capacity{*lab_demand(*m) / 1700, 0, 100'000'000, 0.97, 8, "measured"};
  Capabilities caps(p);
  auto c = choose_time_scale(*m, "", caps);
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->scale.factor, 2000);
  EXPECT_EQ(p.calibrations, 1);
  EXPECT_NE(c->why.find("over this machine's"), std::string::npos) << c->why;
  // --time-scale wins over the scenario; a factor below what the machine carries is kept and
  // said so.
  auto n = choose_time_scale(*m, "500", caps);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->scale.factor, 500);
  EXPECT_EQ(n->why, "--time-scale 500");
  ASSERT_EQ(n->notes.size(), 1u);
  EXPECT_NE(n->notes[0].find("auto would pick x2000"), std::string::npos) << n->notes[0];
  EXPECT_FALSE(choose_time_scale(*m, "0.1", caps));
  EXPECT_FALSE(choose_time_scale(*m, "x", caps));
}

// A lab with GSO super-frames through its fabric is dilated by what the machine carries so.
TEST(TimeScale, AGsoLabAsksForTheGsoCapacity) {
  auto plain = build_model(load(with(k400g, "time_scale: 4000", "time_scale: auto")), 0);
  auto gso = build_model(load(with(with(k400g, "time_scale: 4000", "time_scale: auto"), "fabric: {",
                                   "fabric: {gso: 64K, ")),
                         0);
  ASSERT_TRUE(plain && gso);
  CapacityProbe p;
  p.measured = Capacity{*lab_demand(*plain) / 1700, 0, 100'000'000, 0.97, 8, "measured"};
  Capabilities caps(p);
  auto c = choose_time_scale(*gso, "", caps);
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_NE(c->why.find("(with GSO super-frames)"), std::string::npos) << c->why;
  ASSERT_TRUE(choose_time_scale(*plain, "", caps));
  ASSERT_EQ(p.kinds.size(), 2u);
  EXPECT_EQ(p.kinds[0], CapacityKind::Gso);
  EXPECT_EQ(p.kinds[1], CapacityKind::Plain);
  // Soft-RoCE's frames are one skb each, GSO or not: the plain capacity (kept, not asked again).
  auto rxe = choose_time_scale(*gso, "", caps, /*rxe=*/true);
  ASSERT_TRUE(rxe);
  EXPECT_EQ(rxe->why.find("GSO"), std::string::npos) << rxe->why;
  EXPECT_EQ(p.kinds.size(), 2u);
}

TEST(TimeScale, SmallCollectiveStepsNeedTheMachinesOverheadDilatedAway) {
  // 8 hosts at 400G, 1 MiB: a step moves 128 KiB, 2.62 us of the real fabric; a machine that
  // adds 0.5 ms a step needs x3815 to make that 5%.
  auto m = build_model(
      load(std::string(k400g) +
           "workload: [{collective: allreduce, sizes: [16M, 1M]}, {exec: {command: [true]}}]\n"),
      0);
  ASSERT_TRUE(m);
  Capacity c;
  c.step_overhead_s = 0.5e-3;
  const double step_s = (1 << 20) / 8.0 * 8 / 400e9;
  EXPECT_NEAR(latency_time_scale(*m, c), 0.5e-3 / (0.05 * step_s), 1);
  // Without a collective, or a measured overhead, nothing to keep small.
  auto none = build_model(load(k400g), 0);
  EXPECT_EQ(latency_time_scale(*none, c), 1);
  EXPECT_EQ(latency_time_scale(*m, Capacity{}), 1);
}

TEST(TimeScale, AutoIsRefusedWithTheReasonWhenItCannotWork) {
  CapacityProbe p;  // calibration finds nothing
  Capabilities caps(p);
  auto m = build_model(load(k400g), 0);
  auto c = choose_time_scale(*m, "auto", caps);
  ASSERT_FALSE(c);
  EXPECT_EQ(errno_of(c.error()), EOPNOTSUPP);
  EXPECT_NE(c.error().message.find("calibration failed"), std::string::npos);
  auto unrated = build_model(
      load("name: u\ntime_scale: auto\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, "
           "hosts_per_leaf: 1}\n"),
      0);
  c = choose_time_scale(*unrated, "", caps);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("needs a rate on every host's link"), std::string::npos);
}

}  // namespace
}  // namespace fabemu
