// The link model in whole labs, driven through the CLI: every port shaped at `up`, counters in
// `status`, live `link set/down/up`, rates measured with iperf3 across the fabric, one wire
// packet per skb, and nothing left behind. Runs on the htb path here (no fq) and on the fq path
// in the VM lane; the tests say which one they saw.
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "doctor/capabilities.h"
#include "doctor/system_probe.h"
#include "lab_fixture.h"

namespace fabemu::itest {
namespace {

// Two leaves, two hosts each, every link shaped: what the tests below change and measure.
constexpr const char* kShaped = R"(name: lm
seed: 3
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
fabric: {mtu: 1500}
links:
  default: {rate: 1gbit}
rdma: {enabled: off}
)";

constexpr const char* kUnshaped = R"(name: lm
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
rdma: {enabled: off}
)";

constexpr const char* kDelayed = R"(name: lm
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
links:
  default: {delay: 5ms}
rdma: {enabled: off}
)";

// This kernel's answers, asked the way `up` asks them.
Capabilities& capabilities() {
  static SystemProbe probe("/run/fabemu", /*fresh=*/false);
  static Capabilities caps(probe);
  return caps;
}

bool kernel_has_fq() {
  return capabilities().fq().yes();
}

// The mode `up` picks, as `status --json` names it.
std::string expected_mode() {
  if (kernel_has_fq()) return "fq";
  return capabilities().htb().yes() ? "htb" : "policer";
}

// One direction's entry in `status --json`.
struct DirJson {
  bool found = false, shaped = false;
  uint64_t packets = 0, bytes = 0, drop_loss = 0, drop_queue = 0, drop_down = 0;
  std::string shape;  // the raw shape object
};

DirJson direction(const std::string& json, const std::string& name) {
  DirJson d;
  std::smatch m;
  const std::regex re(
      "\"direction\":\"" + name +
      R"re(","shaped":(true|false),"shape":(\{[^}]*\}),"counters":\{"packets":(\d+),"bytes":(\d+),"drop_loss":(\d+),"drop_queue":(\d+),"drop_down":(\d+))re");
  if (!std::regex_search(json, m, re)) return d;
  d.found = true;
  d.shaped = m[1] == "true";
  d.shape = m[2];
  d.packets = std::stoull(m[3]);
  d.bytes = std::stoull(m[4]);
  d.drop_loss = std::stoull(m[5]);
  d.drop_queue = std::stoull(m[6]);
  d.drop_down = std::stoull(m[7]);
  return d;
}

class LinkModelTest : public LabTest {
 protected:
  void SetUp() override {
    LabTest::SetUp();
    if (IsSkipped()) return;
    if (!find_tool("iperf3")) GTEST_SKIP() << "iperf3 is not installed";
  }

  static std::string status_json(const LabGuard& lab) {
    Outcome o = fabemu({"status", lab.name(), "--json"});
    EXPECT_EQ(o.status, 0) << o;
    return o.out;
  }

  static Outcome link(const LabGuard& lab, Argv args) {
    Argv full = {"link"};
    full.insert(full.end(), args.begin(), args.end());
    full.insert(full.begin() + 2, lab.name());
    return fabemu(full);
  }

  static double iperf(const LabGuard& lab, const std::string& from, const std::string& to,
                      const std::string& udp_rate, int seconds = 2, double* sent_s = nullptr) {
    return iperf_bps(lab, from, to, udp_rate, seconds, sent_s);
  }
};

TEST_F(LinkModelTest, EveryPortIsShapedCountedAndDownRemovesTheMaps) {
  TempScenario sc(kShaped);
  const std::string name = lab_name("lm");
  const Snapshot before = Snapshot::take(name);
  {
    LabGuard lab(name);
    Outcome up = lab.up_json(sc.path());
    ASSERT_EQ(up.status, 0) << up;
    EXPECT_EQ(json_of(up)["shaped_ports"], 16) << up;
    ASSERT_EQ(lab.exec("h1", {"/usr/bin/ping", "-c3", "-i0.2", "-W2", "h4"}).status, 0);
    const std::string json = status_json(lab);
    EXPECT_NE(json.find(R"("mode":")" + expected_mode() + "\""), std::string::npos) << json;
    for (const char* dir : {"h1>leaf1", "leaf1>h1", "leaf1>spine1", "spine2>leaf2", "h4>leaf2"}) {
      DirJson d = direction(json, dir);
      ASSERT_TRUE(d.found) << dir << " in " << json;
      EXPECT_TRUE(d.shaped) << dir;
      EXPECT_NE(d.shape.find(R"("rate_bps":1000000000)"), std::string::npos) << dir << d.shape;
    }
    // The echo requests left h1 and the replies reached it: both directions counted them.
    EXPECT_GE(direction(json, "h1>leaf1").packets, 3u);
    EXPECT_GE(direction(json, "leaf1>h1").packets, 3u);
    EXPECT_TRUE(std::filesystem::exists("/sys/fs/bpf/fabemu/" + name));
    ASSERT_EQ(lab.down().status, 0);
  }
  EXPECT_EQ(Snapshot::take(name), before);
}

TEST_F(LinkModelTest, RateHoldsAcrossTheFabricAndChangesLive) {
  TempScenario sc(kShaped);
  LabGuard lab(lab_name("lr"));
  ASSERT_EQ(lab.up(sc.path()).status, 0);
  // h1 -> h2 crosses h1>leaf1 and leaf1>h2, both 1 Gbit/s; narrow h1's uplink, with a queue
  // of 50 ms: an emulated CPU (the VM lane) stalls the sender for more than the 10 ms default
  // now and then, and a drained queue leaves the link idle.
  ASSERT_EQ(link(lab, {"set", "h1:leaf1", "--rate", "20mbit", "--queue", "50ms"}).status, 0);
  const std::string other_before = direction(status_json(lab), "leaf2>spine1").shape;
  // What crossed the fabric: the frames leaf1 forwarded to h2 (its port's counters count whole
  // frames, as the rate does), over the sender's time. Not iperf3's received payload: under
  // TCG the receiving host's own CPU drops datagrams the link delivered (2657 of 3222 once).
  auto carried = [&](const std::string& offered) {
    const uint64_t before = direction(status_json(lab), "leaf1>h2").bytes;
    double secs = 0;
    const double got = iperf(lab, "h1", "h2", offered, 3, &secs);
    std::this_thread::sleep_for(200ms);  // the queue drains
    const uint64_t after = direction(status_json(lab), "leaf1>h2").bytes;
    const double bps = secs > 0 ? double(after - before) * 8 / secs : 0;
    std::printf("UDP offered %s: %.2f Mbit/s of frames crossed (%.2f of payload received)\n",
                offered.c_str(), bps / 1e6, got / 1e6);
    return bps;
  };
  double first = carried("40M");
  if (first < 20e6 * 0.95) {
    // The VM lane's emulated CPU is descheduled now and then (the kernel's cleanup of earlier
    // tests' namespaces runs beside): one more measurement before judging.
    first = carried("40M");
  }
  // Never above the rate: that is the link model's. Up to it only while the sender keeps the
  // queue full, which is the sender's CPU: 19.2-20.2 Mbit/s here, 14.2-18.8 under TCG (VM lane,
  // Debian 12's kernel and 7.3), where iperf3 offers its 40 Mbit/s in bursts the queue cannot
  // hold. So the lower bound is loose; the change shows in the upper one (8.4 against 14+).
  EXPECT_LE(first, 20e6 * 1.05);
  EXPECT_GE(first, 20e6 * 0.6);
  ASSERT_EQ(link(lab, {"set", "h1>leaf1", "--rate", "8mbit"}).status, 0);
  const double second = carried("40M");
  EXPECT_LE(second, 8e6 * 1.05);
  EXPECT_GE(second, 8e6 * 0.6);
  // Other links kept their shape; the port kept counting across the change.
  const std::string json = status_json(lab);
  EXPECT_EQ(direction(json, "leaf2>spine1").shape, other_before);
  DirJson h1 = direction(json, "h1>leaf1");
  EXPECT_GT(h1.drop_queue, 0u) << "an overloaded port tail-drops";
  EXPECT_NE(h1.shape.find(R"("rate_bps":8000000)"), std::string::npos) << h1.shape;
  EXPECT_NE(direction(json, "leaf1>h1").shape.find(R"("rate_bps":20000000)"), std::string::npos);
}

// Every tier of a fat-tree chooses its ECMP next hop afresh: a pod's flows to another pod use
// all four core paths, not the two a hash shared by every switch would leave them.
TEST_F(LinkModelTest, EcmpIsNotPolarizedAcrossTiers) {
  TempScenario sc(R"(name: lm
topology: {kind: fat-tree, k: 4}
fabric: {switch: router, ecmp_hash: l4, mtu: 1500}
links: {default: {rate: 1gbit}}
rdma: {enabled: off}
)");
  LabGuard lab(lab_name("lp"));
  ASSERT_EQ(lab.up(sc.path()).status, 0);
  Process server = spawn(
      {kFabemu, "exec", lab.name() + ":h9", "--", *find_tool("iperf3"), "-s", "-1", "-p", "5303"});
  std::this_thread::sleep_for(300ms);
  Outcome o =
      lab.exec("h1", {*find_tool("iperf3"), "-c", "h9", "-p", "5303", "-P", "32", "-t", "2"});
  server.stop(0ms);
  ASSERT_EQ(o.status, 0) << o;
  const std::string json = status_json(lab);
  std::vector<double> core;
  double total = 0;
  for (const char* name : {"agg1>core1", "agg1>core2", "agg2>core3", "agg2>core4"}) {
    core.push_back(double(direction(json, name).bytes));
    total += core.back();
    std::printf("%s %.1f MB\n", name, core.back() / 1e6);
  }
  ASSERT_GT(total, 0);
  int carrying = 0;
  for (double b : core) carrying += b > 0.05 * total;
  EXPECT_GE(carrying, 3) << "h1's 32 flows to another pod crowd onto the core paths of one hash";
  // status's ECMP groups: agg1's group toward the cores holds the same bytes per member, and
  // its imbalance is computed from them; the busiest group comes first.
  const nlohmann::json st = nlohmann::json::parse(json);
  const nlohmann::json& groups = st["ecmp_groups"];
  ASSERT_EQ(groups.size(), 16u);  // every edge and aggregation switch: one upward group
  for (size_t k = 1; k < groups.size(); ++k)
    EXPECT_GE(groups[k - 1]["bytes"].get<double>(), groups[k]["bytes"].get<double>());
  bool seen = false;
  for (const auto& g : groups) {
    if (g["switch"] != "agg1") continue;
    seen = true;
    ASSERT_EQ(g["members"].size(), 2u);
    double sum = 0, most = 0;
    for (const auto& x : g["members"]) {
      const double b = x["bytes"].get<double>();
      EXPECT_EQ(b, double(direction(json, x["direction"].get<std::string>()).bytes));
      sum += b;
      most = std::max(most, b);
    }
    ASSERT_GT(sum, 0);
    EXPECT_NEAR(g["max_over_mean"].get<double>(), most / (sum / 2), 1e-9);
    EXPECT_GT(g["jain"].get<double>(), 0.5 - 1e-9);
    EXPECT_LE(g["jain"].get<double>(), 1 + 1e-9);
  }
  EXPECT_TRUE(seen) << st["ecmp_groups"].dump();
}

TEST_F(LinkModelTest, TcpHandsTheModelOneWirePacketAtATime) {
  TempScenario sc(kShaped);
  LabGuard lab(lab_name("lg"));
  ASSERT_EQ(lab.up(sc.path()).status, 0);
  ASSERT_GT(iperf(lab, "h1", "h3", ""), 0);
  DirJson d = direction(status_json(lab), "h1>leaf1");
  ASSERT_GT(d.packets, 1000u);
  // Without GSO limits TCP would hand the port 64 KiB skbs; with them each is one frame.
  EXPECT_LE(d.bytes / d.packets, 1514u) << d.bytes << " bytes in " << d.packets << " packets";
}

// fabric.gso: TCP hands the ports super-frames, which cross the switches whole (one skb a hop
// for many frames: the interfaces count skbs), while the link model counts and times them as
// their frames, at the link's rate. Loss, drawn per frame, is refused on such a lab.
TEST_F(LinkModelTest, WithGsoSuperFramesCrossWholeAndCountAsTheirFrames) {
  TempScenario sc(R"(name: lm
seed: 3
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
fabric: {mtu: 1500, gso: 64K}
links:
  default: {rate: 200mbit, queue: 50ms}
rdma: {enabled: off}
)");
  LabGuard lab(lab_name("lo"));
  ASSERT_EQ(lab.up(sc.path()).status, 0);
  auto find = [](const nlohmann::json& st, const std::string& dir) {
    for (const auto& l : st["links"])
      for (const auto& [d, end] : {std::pair{"a_to_b", "a"}, std::pair{"b_to_a", "b"}})
        if (l[d]["direction"] == dir) return std::pair{l[d]["counters"], l[end]};
    ADD_FAILURE() << "no direction " << dir;
    return std::pair{nlohmann::json(), nlohmann::json()};
  };
  const nlohmann::json before = json_of(fabemu({"status", lab.name(), "--json"}));
  double secs = 0;
  ASSERT_GT(iperf(lab, "h1", "h2", "", 3, &secs), 0);
  const nlohmann::json after = json_of(fabemu({"status", lab.name(), "--json"}));
  for (const char* dir : {"h1>leaf1", "leaf1>spine1", "spine1>leaf2", "leaf2>h2"}) {
    const auto [c0, i0] = find(before, dir);
    const auto [c1, i1] = find(after, dir);
    const double frames = c1.value("packets", 0.0) - c0.value("packets", 0.0);
    const double bytes = c1.value("bytes", 0.0) - c0.value("bytes", 0.0);
    const double skbs = i1.value("tx_packets", 0.0) - i0.value("tx_packets", 0.0);
    std::printf("%s: %.0f frames of %.0f bytes on average in %.0f skbs, %.1f Mbit/s of frames\n",
                dir, frames, frames > 0 ? bytes / frames : 0, skbs,
                secs > 0 ? bytes * 8 / secs / 1e6 : 0);
    ASSERT_GT(frames, 10000) << dir;
    EXPECT_LE(bytes / frames, 1514) << dir << ": counted in frames";
    // Most of the data went as super-frames: 40 frames a skb on average here; fewer under TCG,
    // where TCP sizes them for a slower, longer-delayed flow.
    EXPECT_GE(frames, 4 * skbs) << dir << ": " << skbs << " skbs";
    // Not above the rate: the frames' bytes, each with its headers, over the sender's time.
    EXPECT_LE(bytes * 8 / secs, 200e6 * 1.05) << dir;
  }
  Outcome o = link(lab, {"set", "h1:leaf1", "--loss", "1%"});
  EXPECT_NE(o.status, 0) << o;
  EXPECT_NE(o.err.find("fabric.gso"), std::string::npos) << o;
}

TEST_F(LinkModelTest, DownDropsEverythingAndUpRestoresTheShape) {
  TempScenario sc(kShaped);
  LabGuard lab(lab_name("ld"));
  ASSERT_EQ(lab.up(sc.path()).status, 0);
  ASSERT_EQ(lab.exec("h1", {"/usr/bin/ping", "-c1", "-W2", "h2"}).status, 0);
  ASSERT_EQ(link(lab, {"down", "leaf1:h2"}).status, 0);
  EXPECT_NE(lab.exec("h1", {"/usr/bin/ping", "-c2", "-W1", "h2"}).status, 0);
  DirJson d = direction(status_json(lab), "leaf1>h2");
  EXPECT_GE(d.drop_down, 2u);
  ASSERT_EQ(link(lab, {"up", "leaf1:h2"}).status, 0);
  EXPECT_EQ(lab.exec("h1", {"/usr/bin/ping", "-c1", "-W2", "h2"}).status, 0);
  EXPECT_NE(direction(status_json(lab), "leaf1>h2").shape.find(R"("rate_bps":1000000000)"),
            std::string::npos);
}

TEST_F(LinkModelTest, LinkSetShapesALinkOfAnUnshapedLab) {
  TempScenario sc(kUnshaped);
  LabGuard lab(lab_name("lu"));
  ASSERT_EQ(lab.up(sc.path()).status, 0);
  EXPECT_FALSE(direction(status_json(lab), "h1>leaf1").shaped);
  ASSERT_EQ(lab.exec("h1", {"/usr/bin/ping", "-c1", "-W2", "h2"}).status, 0);
  Outcome set = link(lab, {"set", "h1>leaf1", "--loss", "100%", "--json"});
  ASSERT_EQ(set.status, 0) << set;
  const nlohmann::json changes = json_of(set)["changes"];
  ASSERT_EQ(changes.size(), 1u) << set;
  EXPECT_TRUE(changes[0]["attached_now"]) << set;
  EXPECT_NE(lab.exec("h1", {"/usr/bin/ping", "-c2", "-W1", "h2"}).status, 0);
  DirJson d = direction(status_json(lab), "h1>leaf1");
  EXPECT_TRUE(d.shaped);
  EXPECT_GE(d.drop_loss, 2u);
  ASSERT_EQ(link(lab, {"set", "h1>leaf1", "--loss", "0"}).status, 0);
  EXPECT_EQ(lab.exec("h1", {"/usr/bin/ping", "-c1", "-W2", "h2"}).status, 0);
}

TEST_F(LinkModelTest, BadLinkCommandsAreRefusedWithTheReason) {
  TempScenario sc(kUnshaped);
  LabGuard lab(lab_name("lb"));
  ASSERT_EQ(lab.up(sc.path()).status, 0);
  Outcome o = link(lab, {"set", "h1:spine9", "--rate", "1gbit"});
  EXPECT_EQ(o.status, 2) << o;
  EXPECT_NE(o.err.find("no node named 'spine9'"), std::string::npos) << o;
  o = link(lab, {"set", "h1:leaf1", "--rate", "fast"});
  EXPECT_EQ(o.status, 2) << o;
  EXPECT_NE(o.err.find("--rate"), std::string::npos) << o;
  o = link(lab, {"set", "h1:leaf1"});
  EXPECT_EQ(o.status, 2) << o;
  // The scenario file's rules: a byte queue holds at least one full-size packet.
  o = link(lab, {"set", "h1:leaf1", "--queue", "100"});
  EXPECT_EQ(o.status, 2) << o;
  EXPECT_NE(o.err.find("cannot hold one 1500-byte packet"), std::string::npos) << o;
  o = fabemu({"link", "set", "nolab", "h1:leaf1", "--rate", "1gbit"});
  EXPECT_EQ(o.status, 3) << o;
}

// With Open vSwitch switches the program sits on the bridges' ports in the lab's OVS namespace,
// and `link set` / `link down` work there as on a router's ports.
TEST_F(LinkModelTest, OvsSwitchPortsAreShapedCountedAndChangedLive) {
  if (!find_tool("ovs-vswitchd")) GTEST_SKIP() << "ovs-vswitchd is not installed";
  std::string text = kShaped;
  text.replace(text.find("fabric: {mtu: 1500}"), 19, "fabric: {mtu: 1500, switch: ovs}");
  TempScenario sc(text);
  LabGuard lab(lab_name("lo"));
  Outcome up = lab.up_json(sc.path());
  ASSERT_EQ(up.status, 0) << up;
  EXPECT_EQ(json_of(up)["shaped_ports"], 16) << up;
  // Here the excess crosses a bridge before it is dropped (on a router test it is dropped at the
  // sender's own port): rates low enough for the VM lane's emulated CPU, which also runs
  // ovs-vswitchd, to carry twice over.
  // Neighbours resolved and the datapath's flows set up before measuring: under TCG the first
  // packets' trips through ovs-vswitchd (ARP replies are flows too) can take seconds.
  ASSERT_EQ(lab.exec("h1", {"/usr/bin/ping", "-c3", "-i0.5", "-W5", "h2"}).status, 0);
  // 4 Mbit/s for 4 s: at 10 the VM lane once carried 2.7 (a build beside the VM took its CPU).
  ASSERT_EQ(link(lab, {"set", "leaf1>h2", "--rate", "4mbit"}).status, 0);
  const double got = iperf(lab, "h1", "h2", "8M", 4);
  const double wire = 1442.0 / 1400;
  std::printf("UDP offered 8 Mbit/s through an OVS port shaped to 4 Mbit/s: %.2f Mbit/s\n",
              got * wire / 1e6);
  EXPECT_NEAR(got * wire, 4e6, 4e6 * 0.05);
  DirJson d = direction(status_json(lab), "leaf1>h2");
  EXPECT_TRUE(d.shaped);
  EXPECT_GT(d.packets, 1000u);
  EXPECT_GT(d.drop_queue, 0u) << "an overloaded port tail-drops";
  ASSERT_EQ(link(lab, {"down", "leaf1:h2"}).status, 0);
  EXPECT_NE(lab.exec("h1", {"/usr/bin/ping", "-c2", "-W1", "h2"}).status, 0);
  EXPECT_GE(direction(status_json(lab), "leaf1>h2").drop_down, 2u);
  ASSERT_EQ(link(lab, {"up", "leaf1:h2"}).status, 0);
  EXPECT_EQ(lab.exec("h1", {"/usr/bin/ping", "-c1", "-W2", "h2"}).status, 0);
}

TEST_F(LinkModelTest, DelayWithoutFqIsRefusedUnlessAccepted) {
  TempScenario sc(kDelayed);
  const std::string name = lab_name("lf");
  const Snapshot before = Snapshot::take(name);
  LabGuard lab(name);
  Outcome o = fabemu({"up", sc.path(), "--lab", name, "-q"});
  if (kernel_has_fq()) {
    // The fq path adds the delay: one ping across 4 ports, 5 ms each, both ways.
    ASSERT_EQ(o.status, 0) << o;
    Outcome ping = lab.exec("h1", {"/usr/bin/ping", "-c3", "-i0.3", "h2"});
    std::smatch m;
    ASSERT_TRUE(std::regex_search(ping.out, m, std::regex(R"(= ([0-9.]+)/)"))) << ping;
    EXPECT_GE(std::stod(m[1]), 40.0) << ping;
    return;
  }
  EXPECT_EQ(o.status, 5) << o;  // unsupported here
  EXPECT_NE(o.err.find("--accept-degraded"), std::string::npos) << o;
  EXPECT_EQ(Snapshot::take(name), before) << "a refused scenario touches nothing";
  o = lab.up_json(sc.path());  // with --accept-degraded
  ASSERT_EQ(o.status, 0) << o;
  // Without fq the link model is htb or the policer: neither adds delay or jitter.
  const std::string mode = json_of(o)["link_model"];
  EXPECT_TRUE(mode == "htb" || mode == "policer") << o;
  EXPECT_EQ(json_of(fabemu({"status", name, "--json"}))["link_model"]["mode"], mode);
}

}  // namespace
}  // namespace fabemu::itest

namespace fabemu::itest {
namespace {

// `doctor` and `up` ask the same capability module; on this kernel they must also say the same:
// the link model's mode, soft-RoCE, and what `up` refuses.
TEST_F(LinkModelTest, DoctorAndUpSayTheSameOfThisKernel) {
  Outcome doc = fabemu({"doctor", "--json"});
  ASSERT_EQ(doc.status, 0) << doc;
  auto report = nlohmann::json::parse(doc.out);
  std::map<std::string, std::string> has;
  for (const auto& f : report["features"]) has[f["id"]] = f["status"];
  // rdma: auto, so that `up` decides soft-RoCE from what it finds.
  TempScenario sc(R"(name: agree
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
links: {default: {rate: 100mbit}}
)");
  LabGuard lab(lab_name("agree"));
  Outcome up = lab.up(sc.path());
  ASSERT_EQ(up.status, 0) << up;
  auto status = nlohmann::json::parse(status_json(lab));
  const std::string mode = has["sch_fq"] == "yes"    ? "fq"
                           : has["sch_htb"] == "yes" ? "htb"
                                                     : "policer";
  EXPECT_EQ(status["link_model"]["mode"], mode) << doc.out;
  EXPECT_EQ(status["rdma"]["mode"], has["rxe"] == "yes" ? "rxe" : "off") << doc.out;
  // What the doctor says is missing, `up` refuses (nothing touched), and the other way round.
  TempScenario delayed(kDelayed);
  LabGuard refused(lab_name("agreed"));
  Outcome strict =
      fabemu({"up", delayed.path(), "--lab", refused.name(), "-q"});   // no --accept-degraded
  EXPECT_EQ(strict.status, has["sch_fq"] == "yes" ? 0 : 5) << strict;  // 5: unsupported
}

}  // namespace
}  // namespace fabemu::itest

namespace fabemu::itest {
namespace {

// `link down` moves the routes off the link as a `down` in the fault timeline does: every flow
// keeps going over the other spine. `--no-reroute` leaves the routes (a blackhole for the flows
// hashed onto the link), and `link up` brings them back.
TEST_F(LinkModelTest, LinkDownReroutesLikeTheFaultTimelineUnlessToldNot) {
  TempScenario sc(kShaped);
  LabGuard lab(lab_name("lr2"));
  ASSERT_EQ(lab.up(sc.path()).status, 0);
  ASSERT_NE(lab.exec("leaf1", {"ip", "route"}).out.find("nexthop"), std::string::npos)
      << "leaf1's uplinks start as one ECMP group";
  Outcome down = link(lab, {"down", "leaf1:spine1", "--json"});
  ASSERT_EQ(down.status, 0) << down;
  // The routes moved ("rerouted: ...", not "routes unchanged: ...").
  const nlohmann::json rerouted = json_of(down)["rerouted"];
  ASSERT_TRUE(rerouted.is_string()) << down;
  EXPECT_TRUE(rerouted.get<std::string>().starts_with("rerouted:")) << down;
  Outcome r = lab.exec("leaf1", {"ip", "route"});
  EXPECT_EQ(r.out.find("nexthop"), std::string::npos) << "the group still holds spine1\n" << r;
  // 16 TCP flows from h1 to h3 (another leaf): with the routes moved, every one carries.
  Process server = spawn(
      {kFabemu, "exec", lab.name() + ":h3", "--", *find_tool("iperf3"), "-s", "-1", "-p", "5304"});
  std::this_thread::sleep_for(300ms);
  Outcome o =
      lab.exec("h1", {*find_tool("iperf3"), "-c", "h3", "-p", "5304", "-P", "16", "-t", "2", "-J"});
  server.stop(0ms);
  ASSERT_EQ(o.status, 0) << o;
  auto j = nlohmann::json::parse(o.out, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("end")) << o;
  int carried = 0;
  for (const auto& s : j["end"]["streams"]) carried += s["sender"].value("bytes", 0.0) > 0;
  EXPECT_EQ(carried, 16) << "flows hashed onto the downed link were blackholed";
  ASSERT_EQ(link(lab, {"up", "leaf1:spine1"}).status, 0);
  EXPECT_NE(lab.exec("leaf1", {"ip", "route"}).out.find("nexthop"), std::string::npos)
      << "link up returns the routes";
  // --no-reroute: the link drops everything, the group stays.
  Outcome silent = link(lab, {"down", "leaf1:spine1", "--no-reroute", "--json"});
  ASSERT_EQ(silent.status, 0) << silent;
  EXPECT_TRUE(json_of(silent)["rerouted"].is_null()) << silent;
  EXPECT_NE(lab.exec("leaf1", {"ip", "route"}).out.find("nexthop"), std::string::npos);
}

}  // namespace
}  // namespace fabemu::itest
