// fabric.load_balance in whole labs (docs/load-balancing.md): the eBPF balancer at the switches'
// ingress spreads one TCP flow over every spine (spray), stops using a member whose link is down
// at once (spray, flowlet, adaptive) where static ECMP keeps hashing onto it, and a bad mode
// exits 2 naming the key; spraying reorders frames, and the report counts them.
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "lab_fixture.h"

namespace fabemu::itest {
namespace {

std::string scenario(const std::string& fabric) {
  return "name: lb\nseed: 5\n"
         "topology: {kind: leaf-spine, leaves: 2, spines: 4, hosts_per_leaf: 2}\n"
         "fabric: " +
         fabric +
         "\nlinks: {default: {rate: 1gbit}}\n"
         "rdma: {enabled: off}\n";
}

class LoadBalanceTest : public LabTest {
 protected:
  void SetUp() override {
    LabTest::SetUp();
    if (IsSkipped()) return;
    if (!find_tool("iperf3")) GTEST_SKIP() << "iperf3 is not installed";
  }

  static nlohmann::json status(const LabGuard& lab) {
    Outcome o = fabemu({"status", lab.name(), "--json"});
    EXPECT_EQ(o.status, 0) << o;
    return nlohmann::json::parse(o.status == 0 ? o.out : "{}");
  }

  // The bytes of each member of `sw`'s ECMP group, by direction ("leaf1>spine2").
  static std::map<std::string, double> members(const nlohmann::json& st, const std::string& sw) {
    std::map<std::string, double> out;
    for (const auto& g : st.value("ecmp_groups", nlohmann::json::array()))
      if (g["switch"] == sw)
        for (const auto& m : g["members"]) out[m["direction"]] = m["bytes"].get<double>();
    return out;
  }

  static uint64_t counter(const nlohmann::json& st, const std::string& dir, const char* name) {
    for (const auto& l : st["links"])
      for (const char* side : {"a_to_b", "b_to_a"})
        if (l[side]["direction"] == dir) return l[side]["counters"][name].get<uint64_t>();
    ADD_FAILURE() << "no direction " << dir;
    return 0;
  }
  // The frames the link model dropped because `dir` was down.
  static uint64_t down_drops(const nlohmann::json& st, const std::string& dir) {
    return counter(st, dir, "drop_down");
  }
  // UDP datagrams `host` received for a port nobody listens on (its /proc/net/snmp Udp
  // NoPorts): every one the fabric delivered, and nothing else (ARP, ICMP).
  static uint64_t udp_no_ports(const LabGuard& lab, const std::string& host) {
    Outcome o = lab.exec(host, {"cat", "/proc/net/snmp"});
    EXPECT_EQ(o.status, 0) << o;
    std::istringstream in(o.out);
    std::string header, values;
    while (std::getline(in, header))
      if (header.rfind("Udp: ", 0) == 0 && std::getline(in, values)) {
        std::istringstream names(header), numbers(values);
        std::string name, number;
        while (names >> name && numbers >> number)
          if (name == "NoPorts") return std::stoull(number);
      }
    ADD_FAILURE() << "no Udp NoPorts in " << host << "'s /proc/net/snmp";
    return 0;
  }
};

// One TCP flow, sprayed frame by frame: every spine carries a quarter of it, and TCP delivers
// it whole (iperf3 checks nothing, but the transfer completes and the receiver counts it).
TEST_F(LoadBalanceTest, SprayCarriesOneFlowOverEverySpine) {
  TempScenario sc(scenario("{load_balance: spray}"));
  LabGuard lab(lab_name("ls"));
  ASSERT_EQ(lab.up(sc.path()).status, 0);
  ASSERT_GT(iperf_bps(lab, "h1", "h3", ""), 0);
  const auto bytes = members(status(lab), "leaf1");
  ASSERT_EQ(bytes.size(), 4u);
  double total = 0;
  for (const auto& [dir, b] : bytes) total += b;
  ASSERT_GT(total, 1e6);
  for (const auto& [dir, b] : bytes) {
    std::printf("%s %.2f MB\n", dir.c_str(), b / 1e6);
    EXPECT_NEAR(b / total, 0.25, 0.02) << dir << ": round robin gives each spine a quarter";
  }
}

// leaf1's uplink to spine1 down, routes left as they were (--no-reroute): 200 one-way UDP
// flows from h1 to h3 (200 source ports). Static ECMP keeps hashing some onto the dead member (a
// blackhole until routes change); the balanced modes skip it at once and deliver every datagram.
// One way only: the way back crosses leaf2, which cannot know that spine1 lost leaf1 (no mode
// here is global; a routing protocol or a reroute tells it).
TEST_F(LoadBalanceTest, BalancedModesStopUsingADownMemberAtOnce) {
  const std::string send =
      "import socket\n"
      "for p in range(200):\n"
      "  s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
      "  s.bind(('', 20000 + p)); s.sendto(b'x', ('h3', 9)); s.close()\n";
  for (const char* mode : {"ecmp", "spray", "{flowlet: {gap: 20us}}", "adaptive"}) {
    SCOPED_TRACE(mode);
    TempScenario sc(scenario(std::string("{load_balance: ") + mode + "}"));
    LabGuard lab(lab_name("lf"));
    ASSERT_EQ(lab.up(sc.path()).status, 0);
    Outcome warm = lab.exec("h1", {"ping", "-c", "1", "-W", "2", "h3"});  // ARP on every hop
    ASSERT_EQ(warm.status, 0) << warm;
    Outcome down = fabemu({"link", "down", lab.name(), "leaf1:spine1", "--no-reroute"});
    ASSERT_EQ(down.status, 0) << down;
    const uint64_t before = udp_no_ports(lab, "h3");
    Outcome o = lab.exec("h1", {"python3", "-c", send});
    ASSERT_EQ(o.status, 0) << o;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const nlohmann::json st = status(lab);
    const uint64_t got = udp_no_ports(lab, "h3") - before;
    std::printf("%s: %llu of 200 delivered, leaf1>spine1 dropped %llu\n", mode,
                static_cast<unsigned long long>(got),
                static_cast<unsigned long long>(down_drops(st, "leaf1>spine1")));
    if (std::string(mode) == "ecmp") {
      EXPECT_LT(got, 200u) << "no flow of 200 hashed onto the dead member";
      continue;
    }
    EXPECT_EQ(got, 200u);
    EXPECT_EQ(down_drops(st, "leaf1>spine1"), 0u);
  }
}

// The same two TCP flows from leaf1 to leaf2 under static ECMP and then sprayed, over spines
// whose paths differ (spine1's link down to leaf2 is 100 Mbit/s: its queue holds what it is
// given; a delay would do too, but a kernel without fq adds none): ECMP keeps each flow on one
// path, so its frames reach their last hop in order; spraying sends every frame another way, so
// frames arrive out of order, and the report says how many and what TCP made of it.
TEST_F(LoadBalanceTest, SprayingReordersAndTheReportCountsIt) {
  TempScenario sc(
      "name: lbo\nseed: 5\n"
      "topology: {kind: leaf-spine, leaves: 2, spines: 4, hosts_per_leaf: 2}\n"
      "fabric: {load_balance: ecmp}\n"
      "links:\n  default: {rate: 1gbit}\n"
      "  overrides: [{link: \"spine1>leaf2\", rate: 100mbit}]\n"
      "rdma: {enabled: off}\n"
      "workload:\n"
      "  - {traffic: {flows: [[h1, h3], [h2, h4]], transport: tcp, duration: 1s}}\n"
      "  - load_balance: spray\n"
      "  - {traffic: {flows: [[h1, h3], [h2, h4]], transport: tcp, duration: 1s}}\n");
  const std::string name = lab_name("lo");
  LabGuard lab(name);
  TempScenario report("");  // a directory for the report, gone with the test
  const std::string dir = report.path() + ".d";
  Outcome o = fabemu({"run", sc.path(), "--lab", name, "--accept-degraded", "--report", dir},
                     std::chrono::seconds(240));
  ASSERT_EQ(o.status, 0) << o;
  std::map<int, nlohmann::json> order;
  for (const nlohmann::json& j : records_of(report_json(dir), "order"))
    order[j["step"].get<int>()] = j;
  ASSERT_EQ(order.size(), 2u) << "an order record for each traffic step";
  for (const auto& [step, j] : order) std::printf("step %d: %s\n", step, j.dump().c_str());
  const auto& ecmp = order[0];
  const auto& spray = order[2];
  EXPECT_GT(ecmp["frames"].get<uint64_t>(), 1000u);
  EXPECT_EQ(ecmp["reordered"].get<uint64_t>(), 0u) << "a hashed flow keeps one path";
  EXPECT_GT(spray["frames"].get<uint64_t>(), 1000u);
  EXPECT_GT(spray["reordered"].get<uint64_t>(), 0u) << "sprayed frames over unequal paths";
  EXPECT_GT(spray["moves"].get<uint64_t>(), 0u);
  EXPECT_GT(spray["tcp"]["out_segs"].get<uint64_t>(), 0u);
  ASSERT_FALSE(spray["worst"].empty());
  const std::string worst = spray["worst"][0]["flow"];
  EXPECT_TRUE(worst.rfind("h1:", 0) == 0 || worst.rfind("h2:", 0) == 0) << worst;
  EXPECT_NE(o.out.find("frames out of order"), std::string::npos) << o;
}

TEST_F(LoadBalanceTest, AnUnknownModeOrOneOvsCannotDoExitsTwoNamingTheKey) {
  TempScenario bad(scenario("{load_balance: wrr}"));
  LabGuard lab(lab_name("lb"));
  Outcome o = lab.up(bad.path());
  EXPECT_EQ(o.status, 2) << o;
  EXPECT_NE(o.err.find("fabric.load_balance: unknown mode 'wrr'"), std::string::npos) << o;
  TempScenario ovs(scenario("{switch: ovs, load_balance: {adaptive: {granularity: flowlet}}}"));
  o = lab.up(ovs.path());
  EXPECT_EQ(o.status, 2) << o;
  EXPECT_NE(o.err.find("fabric.load_balance: modes other than ecmp run in fabemu's eBPF "
                       "balancer on router switches"),
            std::string::npos)
      << o;
  EXPECT_FALSE(std::filesystem::exists(run_dir(lab.name())));
}

}  // namespace
}  // namespace fabemu::itest
