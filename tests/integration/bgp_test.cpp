// routing: bgp as users see it: a fat-tree whose switches run FRR comes up converged to the
// routing plan, every host reaches every other, vtysh answers inside a switch, and `down`
// returns when no daemon is left; a spine link that goes down during traffic is detected by
// BFD, the FIBs change (recorded per fault) and traffic goes on over the other spine.
#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "lab_fixture.h"
#include "util/json.h"

namespace fabemu::itest {
namespace {

// FRR's daemons running on this machine (any: the count before and after a lab).
int frr_daemons() {
  int n = 0;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      const std::string comm = read_text(std::string("/proc/") + e->d_name + "/comm");
      if (comm == "zebra\n" || comm == "bgpd\n" || comm == "bfdd\n") ++n;
    }
    ::closedir(d);
  }
  return n;
}

class BgpTest : public LabTest {
 protected:
  void SetUp() override {
    LabTest::SetUp();
    if (IsSkipped()) return;
    if (::access("/usr/lib/frr/bgpd", X_OK) != 0)
      GTEST_SKIP() << "FRR is not installed (scripts/install-deps installs it)";
  }

  // `fabemu run` of `sc` in `lab`: its outcome, and its report.jsonl as text and records (the
  // report's directory is gone afterwards).
  struct Run {
    Outcome o;
    std::string jsonl;
    Json report;
  };
  static Run run_scenario(const TempScenario& sc, const std::string& lab) {
    char dir[] = "/tmp/fabemu-bgp-XXXXXX";
    Run r;
    if (!::mkdtemp(dir)) {
      ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
      return r;
    }
    r.o = fabemu({"run", sc.path(), "--lab", lab, "--report", dir}, std::chrono::seconds(180));
    r.jsonl = read_text(std::string(dir) + "/report.jsonl");
    r.report = report_json(dir);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return r;
  }
};

TEST_F(BgpTest, FatTreeConvergesToThePlanAndEveryHostReachesEveryOther) {
  const std::string lab = lab_name("bg");
  const int before = frr_daemons();
  {
    LabGuard guard(lab);
    TempScenario sc(
        "name: bgp\ntopology: {kind: fat-tree, k: 4}\n"
        "fabric: {routing: bgp, bfd: {interval: 100ms, multiplier: 3}}\nrdma: {enabled: off}\n");
    Outcome up = fabemu({"up", sc.path(), "--lab", lab, "--json"}, 120s);
    ASSERT_EQ(up.status, 0) << up;
    // eBGP on all 20 switches with BFD every 100 ms x 3, converged (up waits) to the plan.
    const Json j = Json::parse(up.out, nullptr, false);
    EXPECT_EQ(j["bgp_routers"], 20) << up;
    EXPECT_EQ(j["bgp_routes"], 456) << up;
    EXPECT_EQ(j["bfd"], Json({{"interval_ns", 100'000'000}, {"multiplier", 3}})) << up;
    EXPECT_EQ(frr_daemons(), before + 60);  // zebra, bfdd, bgpd on each of 20 switches
    // Every host pings every other over the routes BGP installed.
    Outcome pings = fabemu({"exec", lab, "--all", "--", "sh", "-c",
                            "for i in $(seq 1 16); do ping -c1 -W2 -q h$i >/dev/null || echo "
                            "UNREACHABLE h$i; done"},
                           120s);
    EXPECT_EQ(pings.status, 0) << pings;
    EXPECT_EQ(pings.out.find("UNREACHABLE"), std::string::npos) << pings;
    // An edge's view, from inside: two eBGP sessions to its pod's aggregation switches (their
    // own ASN), both with BFD up, and the other pods' blocks over both.
    Outcome show =
        fabemu({"exec", lab + ":edge1", "--", "vtysh", "-c", "show bgp ipv4 unicast summary json"});
    ASSERT_EQ(show.status, 0) << show;
    const Json summary = Json::parse(show.out, nullptr, false);
    ASSERT_TRUE(summary.is_object()) << show;
    ASSERT_TRUE(summary.contains("peers")) << show;
    EXPECT_EQ(summary["peers"].size(), 2u) << show;
    for (const auto& [addr, peer] : summary["peers"].items())
      EXPECT_EQ(peer.value("state", ""), "Established") << addr << "\n" << show;
    Outcome bfd = fabemu({"exec", lab + ":edge1", "--", "vtysh", "-c", "show bfd peers brief"});
    EXPECT_EQ(bfd.status, 0) << bfd;
    EXPECT_EQ(std::count(bfd.out.begin(), bfd.out.end(), '\n') > 0, true);
    EXPECT_NE(bfd.out.find(" up "), std::string::npos) << bfd;
    Outcome route = fabemu({"exec", lab + ":edge1", "--", "ip", "route", "show", "proto", "bgp"});
    EXPECT_NE(route.out.find("nexthop via"), std::string::npos) << "no ECMP route\n" << route;
    Outcome down = fabemu({"down", lab});
    EXPECT_EQ(down.status, 0) << down;
  }
  // Daemons end with the lab, before `down` returns: killed with every process in its
  // namespaces and waited for until reaped (a zombie still counts: its /proc/PID/comm says
  // bgpd, and `pgrep` lists it).
  EXPECT_EQ(frr_daemons(), before);
}

TEST_F(BgpTest, ASpineLinkDownIsDetectedByBfdAndTrafficGoesOnOverTheOtherSpine) {
  const std::string lab = lab_name("bf");
  LabGuard guard(lab);
  // Both spine links of leaf2 fail one after the other, then come back: between the two
  // failures traffic to h2 must flow over the spine that is left.
  TempScenario sc(R"(name: bgpf
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
fabric: {routing: bgp, bfd: {interval: 50ms, multiplier: 3}}
rdma: {enabled: off}
workload:
  - exec: {hosts: [h1], command: [ping, -c, "400", -i, "0.01", -q, h2], timeout: 60s}
faults:
  - {at: 500ms, link: "spine1:leaf2", down: true}
  - {at: 2s, link: "spine1:leaf2", up: true}
  - {at: 2500ms, link: "spine2:leaf2", down: true}
)");
  const auto [o, jsonl, report] = run_scenario(sc, lab);
  ASSERT_EQ(o.status, 0) << o;
  // The first failure was played, and BGP (not fabemu) moved the routes: FIBs changed after it.
  const Json down = fault_record(report, "spine1:leaf2 down");
  ASSERT_TRUE(down.is_object()) << jsonl;
  EXPECT_TRUE(down["done"]) << down;
  EXPECT_NE(down["detail"].get<std::string>().find("BGP reroutes"), std::string::npos) << down;
  EXPECT_GT(down["fib_switches"].get<int>(), 0) << down;
  // Each failure changed some FIB, after it took effect; the report says when. (A link that
  // comes back is taken into use once BFD and BGP have re-established the session, a second
  // or more later: within the next fault's window or not.)
  int faults = 0, changed = 0;
  std::istringstream lines(jsonl);
  for (std::string line; std::getline(lines, line);) {
    const Json j = Json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "fault") continue;
    ++faults;
    if (j["fib_first_s"].is_number()) {
      changed += j.value("what", "").find(" down") != std::string::npos;
      EXPECT_GT(j["fib_first_s"].get<double>(), 0) << line;
      EXPECT_GE(j["fib_last_s"].get<double>(), j["fib_first_s"].get<double>()) << line;
    }
  }
  EXPECT_EQ(faults, 3) << jsonl;
  EXPECT_EQ(changed, 2) << jsonl;
  // Pings answered after the first failure: the other spine carried them.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex(R"((\d+) received)"))) << o;
  EXPECT_GT(std::stoi(m[1]), 100) << o;
}

// A balancing lab under BGP: leaf1 sprays over both spines, and spine1 loses its link to leaf2,
// which leaf1 cannot see (its own links stay up). BGP withdraws spine1's route to leaf2, and
// leaf1's balancer follows its FIB: from then on every echo goes over spine2. Were the groups
// still the plan's, every second echo would go to spine1 and be lost to the end.
TEST_F(BgpTest, ABalancingLeafFollowsItsFibWhenBgpWithdrawsAFarFailure) {
  const std::string lab = lab_name("bl");
  LabGuard guard(lab);
  TempScenario sc(R"(name: bgpl
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
fabric: {routing: bgp, bfd: {interval: 50ms, multiplier: 3}, load_balance: spray}
rdma: {enabled: off}
workload:
  - exec: {hosts: [h1], command: [ping, -c, "400", -i, "0.01", -q, h2], timeout: 60s}
faults:
  - {at: 500ms, link: "spine1:leaf2", down: true}
)");
  const auto [o, jsonl, report] = run_scenario(sc, lab);
  ASSERT_EQ(o.status, 0) << o;
  const Json down = fault_record(report, "spine1:leaf2 down");
  ASSERT_TRUE(down.is_object()) << o;
  EXPECT_EQ(down["detail"].get<std::string>().find("could not follow"), std::string::npos) << down;
  // Lost: half the echoes from the failure until BGP moved leaf1's routes (150 ms of BFD and
  // BGP's update: ~20 of 400), none after.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex(R"((\d+) received)"))) << o;
  EXPECT_GT(std::stoi(m[1]), 340) << o;
}

}  // namespace
}  // namespace fabemu::itest
