// Host, NIC and partition faults as a program in the lab sees them: a crash kills the host's
// processes and cuts it off until it restarts, a frozen host's clock stands still for the
// freeze, a partition cuts the groups from each other but not within, a NIC down cuts its host;
// `down` after each leaves nothing. And OVS switches route an allreduce around a failed link.
#include <signal.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "lab_fixture.h"

namespace fabemu::itest {
namespace {

const std::string kSmall =
    "topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2}\nrdma: {enabled: "
    "off}\n";

class HostFaultTest : public LabTest {
 protected:
  // `fabemu run`: what the lab's programs print is on stdout; fabemu's results are in report_
  // (report.jsonl's records).
  Outcome run(const std::string& text, const std::string& lab) {
    TempScenario sc(text);
    char dir[] = "/tmp/fabemu-hostfault-XXXXXX";
    if (!::mkdtemp(dir)) return {};
    Outcome o = fabemu({"run", sc.path(), "--lab", lab, "--report", dir, "-q"}, 180s);
    report_ = report_json(dir);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return o;
  }
  // The fault step named `what` was applied.
  ::testing::AssertionResult played(const std::string& what) const {
    const nlohmann::json f = fault_record(report_, what);
    if (!f.is_object()) return ::testing::AssertionFailure() << "no fault step " << what;
    if (!f["done"].get<bool>()) return ::testing::AssertionFailure() << "not played: " << f;
    return ::testing::AssertionSuccess() << f;
  }
  nlohmann::json report_;
};

TEST_F(HostFaultTest, ACrashKillsTheHostsProcessesAndCutsItOffUntilItRestarts) {
  const std::string lab = lab_name("hc");
  const Snapshot before = Snapshot::take(lab);
  LabGuard guard(lab);
  TempScenario sc("name: hc\n" + kSmall);
  ASSERT_EQ(fabemu({"up", sc.path(), "--lab", lab}).status, 0);
  // A long-lived program on h3, started the way users start theirs.
  Process sleeper = spawn(fabemu_argv({"exec", lab + ":h3", "--", "sleep", "300"}));
  std::this_thread::sleep_for(500ms);
  ASSERT_EQ(fabemu({"exec", lab + ":h1", "--", "ping", "-c1", "-W2", "h3"}).status, 0);

  Outcome crash = fabemu({"host", "crash", lab, "h3", "--json"});
  ASSERT_EQ(crash.status, 0) << crash;
  const nlohmann::json crashed = json_of(crash);
  EXPECT_EQ(crashed["action"], "crash") << crash;
  EXPECT_EQ(crashed["host"], "h3") << crash;
  // Its one link went down with it ("killed N processes, 1 links down").
  EXPECT_TRUE(crashed["detail"].get<std::string>().ends_with(", 1 links down")) << crash;
  // sleep died of SIGKILL (and so did the exec that waited for it).
  const auto status = wait_for(sleeper, 10s);
  ASSERT_TRUE(status) << "h3's process outlived the crash";
  EXPECT_EQ(fabemu({"exec", lab + ":h1", "--", "ping", "-c1", "-W1", "h3"}).status, 1)
      << "a crashed host still answers";
  EXPECT_EQ(fabemu({"exec", lab + ":h1", "--", "ping", "-c1", "-W2", "h2"}).status, 0)
      << "the crash cut off another host";

  ASSERT_EQ(fabemu({"host", "restart", lab, "h3"}).status, 0);
  EXPECT_EQ(fabemu({"exec", lab + ":h1", "--", "ping", "-c1", "-W2", "h3"}).status, 0)
      << "h3 unreachable after its restart";
  EXPECT_EQ(fabemu({"down", lab}).status, 0);
  EXPECT_EQ(Snapshot::take(lab), before);
}

TEST_F(HostFaultTest, AFrozenHostsClockStandsStillAndDownThawsIt) {
  const auto mounts = cgroup_mounts();
  if (!mounts.count("2") && !mounts.count("freezer"))
    GTEST_SKIP() << "no cgroup freezer here (neither cgroup v2 nor v1's freezer is mounted)";
  const std::string lab = lab_name("hf");
  LabGuard guard(lab);
  // h3 prints the time every 50 ms for 3 s; frozen 1 s in, for 1 s.
  Outcome o = run("name: hf\n" + kSmall +
                      "workload:\n  - exec: {hosts: [h3], command: [sh, -c, 'for i in $(seq "
                      "60); do date +%s.%N; sleep 0.05; done'], timeout: 60s}\n"
                      "faults:\n  - {at: 1s, host: h3, freeze: 1s}\n",
                  lab);
  ASSERT_EQ(o.status, 0) << o;
  // Frozen (every task stopped: a freeze that could not is not done) at 1 s, thawed at 2 s.
  EXPECT_TRUE(played("h3 frozen for 1s")) << o;
  EXPECT_TRUE(played("h3 thawed")) << o;
  EXPECT_NEAR(fault_record(report_, "h3 frozen for 1s").value("due_s", 0.0), 1.0, 1e-9);
  EXPECT_NEAR(fault_record(report_, "h3 thawed").value("due_s", 0.0), 2.0, 1e-9);
  double last = 0, longest = 0;
  std::istringstream lines(o.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, std::regex(R"(^\[h3\] (\d+\.\d+)$)"))) continue;
    const double t = std::stod(m[1]);
    if (last > 0) longest = std::max(longest, t - last);
    last = t;
  }
  // The host did nothing for the freeze: its longest gap holds the whole second.
  EXPECT_GE(longest, 0.95) << o;

  // By hand: a host frozen when the lab goes down does not keep `down` waiting or leave a
  // process behind.
  TempScenario sc("name: hf2\n" + kSmall + "hosts: {overrides: [{host: h2, cpu: 4}]}\n");
  const std::string lab2 = lab_name("hg");
  const Snapshot before = Snapshot::take(lab2);
  LabGuard guard2(lab2);
  ASSERT_EQ(fabemu({"up", sc.path(), "--lab", lab2}).status, 0);
  Process sleeper = spawn(fabemu_argv({"exec", lab2 + ":h2", "--", "sleep", "300"}));
  std::this_thread::sleep_for(500ms);
  Outcome freeze = fabemu({"host", "freeze", lab2, "h2"});
  ASSERT_EQ(freeze.status, 0) << freeze;
  Outcome down = fabemu({"down", lab2});
  EXPECT_EQ(down.status, 0) << down;
  EXPECT_TRUE(wait_for(sleeper, 10s)) << "h2's process survived down";
  // Its cgroups (cpu, memory and, on v1, freezer) went with it.
  EXPECT_EQ(Snapshot::take(lab2), before);
}

TEST_F(HostFaultTest, APartitionCutsTheGroupsApartButNotWithinAndHeals) {
  const std::string lab = lab_name("hp");
  LabGuard guard(lab);
  // h1 and h2 share leaf1, h3 and h4 leaf2: the groups cut across a leaf.
  Outcome o = run("name: hp\n" + kSmall +
                      "workload:\n  - exec: {hosts: [h1], command: [sh, -c, 'sleep 1; "
                      "ping -c1 -W1 h3 >/dev/null && echo CROSS_OK || echo CROSS_CUT; "
                      "ping -c1 -W1 h4 >/dev/null && echo SAME_OK || echo SAME_CUT; "
                      "ping -c1 -W1 h2 >/dev/null && echo LOCAL_OK || echo LOCAL_CUT; "
                      "sleep 3; ping -c1 -W2 h3 >/dev/null && echo HEALED || echo STILL_CUT'], "
                      "timeout: 60s}\n"
                      "faults:\n  - {at: 500ms, partition: [[h1, h4], [h2, h3]], for: 4s}\n",
                  lab);
  ASSERT_EQ(o.status, 0) << o;
  EXPECT_TRUE(played("partition h1,h4 | h2,h3")) << o;
  EXPECT_TRUE(played("partition healed")) << o;
  EXPECT_NE(o.out.find("[h1] CROSS_CUT"), std::string::npos) << o;  // h3: other group
  EXPECT_NE(o.out.find("[h1] SAME_OK"), std::string::npos) << o;    // h4: same group
  EXPECT_NE(o.out.find("[h1] LOCAL_CUT"), std::string::npos) << o;  // h2: same leaf, cut
  EXPECT_NE(o.out.find("[h1] HEALED"), std::string::npos) << o;
}

TEST_F(HostFaultTest, ANicDownCutsItsHostUntilItComesBack) {
  const std::string lab = lab_name("hn");
  LabGuard guard(lab);
  Outcome o = run("name: hn\n" + kSmall +
                      "workload:\n  - exec: {hosts: [h1], command: [sh, -c, 'sleep 1; "
                      "ping -c1 -W1 h3 >/dev/null && echo UP || echo DOWN; sleep 2.5; "
                      "ping -c1 -W2 h3 >/dev/null && echo UP || echo DOWN'], timeout: 60s}\n"
                      "faults:\n  - {at: 500ms, host: h3, nic_down: eth0}\n"
                      "  - {at: 3s, host: h3, nic_up: eth0}\n",
                  lab);
  ASSERT_EQ(o.status, 0) << o;
  const size_t down = o.out.find("[h1] DOWN"), up = o.out.find("[h1] UP");
  EXPECT_NE(down, std::string::npos) << o;
  EXPECT_NE(up, std::string::npos) << o;
  EXPECT_LT(down, up) << o;
  // The NIC's link is the one that went down.
  EXPECT_TRUE(played("h3 eth0 down")) << o;
  EXPECT_EQ(fault_record(report_, "h3 eth0 down")["detail"], "eth0's link h3:leaf2 down") << o;
}

TEST_F(HostFaultTest, OvsSwitchesRouteAnAllreduceAroundAFailedLink) {
  if (!find_tool("ovs-vswitchd")) GTEST_SKIP() << "Open vSwitch is not installed";
  const std::string lab = lab_name("ho");
  LabGuard guard(lab);
  Outcome o =
      run("name: ho\nseed: 3\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: "
          "2}\nfabric: {switch: ovs}\nlinks: {default: {rate: 25mbit}}\nrdma: {enabled: off}\n"
          "workload:\n  - {collective: allreduce, library: gloo, transport: tcp, sizes: [2M], "
          "iterations: 3, timeout: 120s}\n"
          "faults:\n  - {at: 1s, link: \"leaf1:spine1\", down: true}\n",
          lab);
  ASSERT_EQ(o.status, 0) << o;
  // The OVS bridges' flows were replaced around the link (not "flows unchanged: ...").
  EXPECT_TRUE(played("leaf1:spine1 down")) << o;
  EXPECT_TRUE(fault_record(report_, "leaf1:spine1 down")["detail"].get<std::string>().starts_with(
      "rerouted: flows and groups replaced on"))
      << o;
  EXPECT_TRUE(step_ok_and_correct(report_, 0, 1)) << o;
  for (const nlohmann::json& r : step_results(report_, 0)) {
    EXPECT_EQ(r["library"], "gloo") << r;
    EXPECT_EQ(r["transport"], "tcp") << r;
  }
}

// Damage on the wire: every frame of a link sent twice (ping counts the duplicates), then every
// frame corrupted (the next hop discards them: nothing gets through, and the link counts them);
// and the same from the fault timeline.
TEST_F(HostFaultTest, CorruptedFramesAreDroppedByTheNextHopAndDuplicatesArrive) {
  const std::string lab = lab_name("hd");
  LabGuard guard(lab);
  TempScenario sc("name: hd\n" + kSmall);
  ASSERT_EQ(fabemu({"up", sc.path(), "--lab", lab}).status, 0);
  ASSERT_EQ(fabemu({"link", "set", lab, "leaf1>spine1", "--duplicate", "100%"}).status, 0);
  Outcome dup = fabemu({"exec", lab + ":h1", "--", "ping", "-c3", "-i", "0.2", "h3"});
  EXPECT_EQ(dup.status, 0) << dup;
  // (the last request's duplicate may come after ping has stopped counting)
  EXPECT_TRUE(std::regex_search(dup.out, std::regex(R"(3 received, \+[23] duplicates)"))) << dup;
  ASSERT_EQ(
      fabemu({"link", "set", lab, "leaf1>spine1", "--duplicate", "0", "--corrupt", "100%"}).status,
      0);
  Outcome bad = fabemu({"exec", lab + ":h1", "--", "ping", "-c3", "-i", "0.2", "-W1", "h3"});
  EXPECT_EQ(bad.status, 1) << bad;
  EXPECT_NE(bad.out.find("0 received"), std::string::npos) << bad;
  Outcome status = fabemu({"status", lab, "--json"});
  ASSERT_EQ(status.status, 0);
  bool corrupting = false;  // leaf1>spine1's live shape corrupts every frame
  const nlohmann::json links = json_of(status)["links"];
  for (const nlohmann::json& l : links)
    for (const char* d : {"a_to_b", "b_to_a"})
      if (l.contains(d) && l[d]["direction"] == "leaf1>spine1")
        corrupting = l[d]["shape"].value("corrupt", 0.0) == 1.0;
  EXPECT_TRUE(corrupting) << status;
  const std::regex counters(R"re("corrupted":(\d+),"duplicated":(\d+))re");
  uint64_t corrupted = 0, duplicated = 0;
  for (std::sregex_iterator it(status.out.begin(), status.out.end(), counters), end; it != end;
       ++it) {
    corrupted += std::stoull((*it)[1]);
    duplicated += std::stoull((*it)[2]);
  }
  EXPECT_GE(corrupted, 3u) << status;
  EXPECT_GE(duplicated, 3u) << status;
  EXPECT_EQ(fabemu({"down", lab}).status, 0);

  const std::string lab2 = lab_name("he");
  LabGuard guard2(lab2);
  Outcome o = run("name: he\n" + kSmall +
                      "workload:\n  - exec: {hosts: [h1], command: [sh, -c, 'sleep 1; ping -c5 -i "
                      "0.1 -W1 h3 | grep received'], timeout: 60s}\n"
                      "faults:\n  - {at: 500ms, link: \"leaf1:spine1\", set: {corrupt: 100%}}\n",
                  lab2);
  EXPECT_TRUE(played("leaf1:spine1 set corrupt 100%")) << o;
  EXPECT_NE(o.out.find("[h1] 5 packets transmitted, 0 received"), std::string::npos) << o;
}

}  // namespace
}  // namespace fabemu::itest
