// Live changes to a running lab on the in-memory datapath (fake_datapath.h), without root:
// `link set/down/up` through the session, and the fault timeline played by the FaultPlayer.
#include <gtest/gtest.h>

#include <chrono>

#include "fake_datapath.h"
#include "fake_lab.h"
#include "runtime/faults.h"
#include "session/session.h"

namespace fabemu::unit {
namespace {

const std::string kLab =
    "name: t\nseed: 3\n"
    "topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}\n"
    "links:\n  default: {rate: 100mbit}\n";

// The link model on the port of `direction` ("leaf1>spine1"), as the fake kernel holds it.
const ShapePort* shaped(const FakeBackend& f, const std::string& direction) {
  for (const auto& [name, ns] : f.namespaces)
    for (const auto& [ifname, iface] : ns.ifaces)
      if (iface.shaped && iface.shaped->direction == direction) return &*iface.shaped;
  return nullptr;
}

session::LinkRequest request(const std::string& link,
                             std::vector<std::pair<std::string, std::string>> settings) {
  session::LinkRequest r;
  r.lab = "t";
  r.link = link;
  r.settings = std::move(settings);
  return r;
}

TEST(LiveLinks, SetChangesBothDirectionsAndKeepsTheRest) {
  auto a = apply_fake(kLab);
  ASSERT_TRUE(a);
  FakeDatapath dp(a->fake, a->paths, {});
  auto out =
      session::change_link(request("leaf1:spine1", {{"loss", "5%"}}), a->model, a->paths, dp);
  ASSERT_TRUE(out) << out.error().what();
  ASSERT_EQ(out->changes.size(), 2u);
  for (const LinkChange& c : out->changes) {
    EXPECT_FALSE(c.before.loss) << c.name;
    EXPECT_NEAR(c.after.loss.value_or(0), 0.05, 1e-6) << c.name;  // as the datapath holds it
    EXPECT_EQ(c.after.rate_bps, 100'000'000u) << c.name;          // merged: the rate stays
    EXPECT_FALSE(c.attached_now);
  }
  for (const char* d : {"leaf1>spine1", "spine1>leaf1"}) {
    ASSERT_TRUE(shaped(a->fake, d)) << d;
    EXPECT_EQ(shaped(a->fake, d)->shape.loss, 0.05) << d;
  }
  EXPECT_FALSE(shaped(a->fake, "leaf1>spine2")->shape.loss);
  const Json j = out->to_json();
  EXPECT_EQ(j["action"], "set");
  EXPECT_NEAR(j["changes"][0]["after"]["loss"].get<double>(), 0.05, 1e-6);
  EXPECT_TRUE(j["rerouted"].is_null());
}

TEST(LiveLinks, OneDirectionChangesAndItsLossSequenceCarriesOn) {
  auto a = apply_fake(kLab);
  ASSERT_TRUE(a);
  FakeDatapath dp(a->fake, a->paths, {});
  const uint64_t seed = shaped(a->fake, "leaf1>spine1")->seed;
  auto out = session::change_link(request("leaf1>spine1", {{"rate", "50mbit"}, {"loss", "1%"}}),
                                  a->model, a->paths, dp);
  ASSERT_TRUE(out) << out.error().what();
  ASSERT_EQ(out->changes.size(), 1u);
  EXPECT_EQ(out->changes[0].before.rate_bps, 100'000'000u);
  EXPECT_EQ(out->changes[0].after.rate_bps, 50'000'000u);
  EXPECT_EQ(shaped(a->fake, "leaf1>spine1")->seed, seed);
  EXPECT_EQ(shaped(a->fake, "spine1>leaf1")->shape.rate_bps, 100'000'000u);
  EXPECT_EQ(dp.events.front(), "set leaf1>spine1");
}

TEST(LiveLinks, ADilatedLabRunsTheChangeNTimesSlowerAndReportsItInRealUnits) {
  auto a = apply_fake(kLab + "time_scale: 10\n");
  ASSERT_TRUE(a);
  FakeDatapath dp(a->fake, a->paths, {});
  EXPECT_EQ(shaped(a->fake, "leaf1>spine1")->shape.rate_bps, 10'000'000u);  // up's: 100 / 10
  auto out = session::change_link(request("leaf1>spine1", {{"rate", "50mbit"}, {"delay", "1ms"}}),
                                  a->model, a->paths, dp);
  ASSERT_TRUE(out) << out.error().what();
  EXPECT_EQ(out->changes[0].before.rate_bps, 100'000'000u);
  EXPECT_EQ(out->changes[0].after.rate_bps, 50'000'000u);
  EXPECT_EQ(out->changes[0].after.delay_ns, 1'000'000u);
  EXPECT_EQ(shaped(a->fake, "leaf1>spine1")->shape.rate_bps, 5'000'000u);
  EXPECT_EQ(shaped(a->fake, "leaf1>spine1")->shape.delay_ns, 10'000'000u);
}

TEST(LiveLinks, BadChangesAreRefusedAndChangeNothing) {
  auto a = apply_fake(kLab);
  ASSERT_TRUE(a);
  PlanOptions policer;
  policer.fq = false;
  policer.no_fq_reason = "sch_fq: ENOENT";
  FakeDatapath dp(a->fake, a->paths, policer);
  auto bad_value =
      session::change_link(request("leaf1:spine1", {{"loss", "150%"}}), a->model, a->paths, dp);
  ASSERT_FALSE(bad_value);
  EXPECT_EQ(session::failure_of(bad_value.error()), session::Failure::BadInput);
  EXPECT_NE(bad_value.error().message.find("--loss"), std::string::npos)
      << bad_value.error().what();
  auto no_link =
      session::change_link(request("leaf1:h9", {{"loss", "1%"}}), a->model, a->paths, dp);
  ASSERT_FALSE(no_link);
  EXPECT_EQ(session::failure_of(no_link.error()), session::Failure::BadInput)
      << no_link.error().what();
  auto delay =
      session::change_link(request("leaf1:spine1", {{"delay", "1ms"}}), a->model, a->paths, dp);
  ASSERT_FALSE(delay);
  EXPECT_NE(delay.error().message.find("polices its links (no fq on this kernel: sch_fq: ENOENT)"),
            std::string::npos)
      << delay.error().what();
  EXPECT_TRUE(dp.events.empty());
  EXPECT_FALSE(shaped(a->fake, "leaf1>spine1")->shape.loss);
}

TEST(LiveLinks, DownDropsEverythingAndReroutesAndUpBringsItBack) {
  auto a = apply_fake(kLab);
  ASSERT_TRUE(a);
  FakeDatapath dp(a->fake, a->paths, {});
  const int link = find_links(a->model.topo, "leaf1", "spine1").at(0);
  auto r = request("leaf1:spine1", {});
  r.down = true;
  auto down = session::change_link(r, a->model, a->paths, dp);
  ASSERT_TRUE(down) << down.error().what();
  EXPECT_EQ(down->action, "down");
  EXPECT_EQ(shaped(a->fake, "leaf1>spine1")->shape.down, true);
  EXPECT_EQ(shaped(a->fake, "spine1>leaf1")->shape.down, true);
  EXPECT_EQ(dp.failed, std::set<int>{link});
  EXPECT_EQ(down->rerouted, "rerouted around 1 failed links");
  r.down = false;
  ASSERT_TRUE(session::change_link(r, a->model, a->paths, dp));
  EXPECT_EQ(shaped(a->fake, "leaf1>spine1")->shape.down, false);
  EXPECT_TRUE(dp.failed.empty());
  // --no-reroute: a blackhole, the routes stay.
  r.down = true;
  r.reroute = false;
  auto blackhole = session::change_link(r, a->model, a->paths, dp);
  ASSERT_TRUE(blackhole);
  EXPECT_FALSE(blackhole->rerouted);
  EXPECT_TRUE(dp.failed.empty());
}

TEST(LiveLinks, APortWithoutTheLinkModelGetsItFirst) {
  auto a = apply_fake(
      "name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}\n");
  ASSERT_TRUE(a);
  ASSERT_FALSE(shaped(a->fake, "leaf1>spine1")) << "a lab without link settings is unshaped";
  FakeDatapath dp(a->fake, a->paths, {});
  auto out =
      session::change_link(request("leaf1>spine1", {{"loss", "3%"}}), a->model, a->paths, dp);
  ASSERT_TRUE(out) << out.error().what();
  EXPECT_TRUE(out->changes[0].attached_now);
  ASSERT_TRUE(shaped(a->fake, "leaf1>spine1"));
  EXPECT_EQ(shaped(a->fake, "leaf1>spine1")->shape.loss, 0.03);
  EXPECT_EQ(dp.events, std::vector<std::string>{"attach leaf1>spine1"});
}

// Every kind of step, played in time order through the datapath, each with what it did.
TEST(FaultTimeline, IsPlayedInOrderThroughTheDatapath) {
  auto a = apply_fake(kLab +
                      "faults:\n"
                      "  - {at: 10ms, link: \"leaf1:spine1\", down: true}\n"
                      "  - {at: 20ms, link: \"leaf1:spine1\", up: true}\n"
                      "  - {at: 30ms, link: \"leaf2>spine2\", set: {loss: 2%}}\n"
                      "  - {at: 40ms, host: h3, crash: true}\n"
                      "  - {at: 50ms, host: h3, restart: true}\n"
                      "  - {at: 60ms, host: h1, freeze: 10ms}\n"
                      "  - {at: 80ms, host: h2, slow: {cpu: 0.5, for: 10ms}}\n"
                      "  - {at: 100ms, partition: [[h1], [h4]], for: 10ms}\n");
  ASSERT_TRUE(a);
  auto owned = std::make_unique<FakeDatapath>(a->fake, a->paths, PlanOptions{});
  FakeDatapath& dp = *owned;
  FaultPlayer player(a->model, a->paths, expand_faults(a->model.scenario), std::move(owned));
  player.start(std::chrono::steady_clock::now());
  player.wait();
  const int l11 = find_links(a->model.topo, "leaf1", "spine1").at(0);
  const int leaf1 = a->model.topo.find("leaf1"), leaf2 = a->model.topo.find("leaf2");
  EXPECT_EQ(dp.events, (std::vector<std::string>{"set leaf1>spine1",
                                                 "set spine1>leaf1",
                                                 "fail " + std::to_string(l11),
                                                 "set leaf1>spine1",
                                                 "set spine1>leaf1",
                                                 "repair " + std::to_string(l11),
                                                 "set leaf2>spine2",  // loss 2%
                                                 "set h3>leaf2",
                                                 "set leaf2>h3",
                                                 "kill h3",  // crash: links first
                                                 "thaw h3",  // (cgroup v1 ends frozen tasks so)
                                                 "set h3>leaf2",
                                                 "set leaf2>h3",  // restart
                                                 "freeze h1",
                                                 "thaw h1",
                                                 "cpu h2 0.50",
                                                 "cpu h2 none",
                                                 "cut 1 rules on " + std::to_string(leaf1),
                                                 "cut 1 rules on " + std::to_string(leaf2),
                                                 "heal 1 rules on " + std::to_string(leaf1),
                                                 "heal 1 rules on " + std::to_string(leaf2)}));
  EXPECT_EQ(shaped(a->fake, "leaf2>spine2")->shape.loss, 0.02);
  EXPECT_EQ(shaped(a->fake, "h3>leaf2")->shape.down, false);
  EXPECT_TRUE(dp.failed.empty());
  EXPECT_TRUE(dp.rules.empty());
  EXPECT_EQ(dp.frozen["h1"], false);
  for (const AppliedFault& f : player.log()) {
    EXPECT_TRUE(f.done) << f.step.what << ": " << f.error;
    EXPECT_GE(f.applied_s, f.due_s) << f.step.what;
  }
  EXPECT_EQ(player.log()[3].detail, "killed 3 processes, 1 links down");
}

// A step the lab refuses fails alone, with the reason; the timeline goes on.
TEST(FaultTimeline, AFailedStepSaysWhyAndTheRestIsPlayed) {
  auto a = apply_fake(kLab +
                      "faults:\n"
                      "  - {at: 5ms, host: h1, freeze: 5ms}\n"
                      "  - {at: 20ms, link: \"leaf1:spine1\", set: {loss: 1%}}\n");
  ASSERT_TRUE(a);
  a->fake.cgroups.erase(host_cgroup(a->paths, "h1"));  // as if the cgroup had gone
  FaultPlayer player(a->model, a->paths, expand_faults(a->model.scenario),
                     std::make_unique<FakeDatapath>(a->fake, a->paths, PlanOptions{}));
  player.start(std::chrono::steady_clock::now());
  player.wait();
  const auto log = player.log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_FALSE(log[0].done);
  EXPECT_NE(log[0].error.find("h1 has no cgroup"), std::string::npos) << log[0].error;
  EXPECT_TRUE(log[2].done) << log[2].error;
  EXPECT_EQ(shaped(a->fake, "leaf1>spine1")->shape.loss, 0.01);
}

}  // namespace
}  // namespace fabemu::unit
