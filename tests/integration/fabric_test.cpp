// Whole labs driven through the CLI as users drive them: reachability across leaf-spine, fat-tree
// and rail-optimized fabrics, ECMP spreading, host containers, and teardown that leaves nothing.
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apply/inspect.h"
#include "apply/ovs.h"
#include "apply/veth.h"
#include "doctor/probe.h"
#include "lab_fixture.h"
#include "util/netlink.h"
#include "util/netns.h"
#include "util/unique_fd.h"

namespace fabemu::itest {
namespace {

const std::string kDefaultScenario = kSourceDir + "/scenarios/default.yaml";
const std::string kFatTreeScenario = kSourceDir + "/scenarios/fat-tree-k4.yaml";
const std::string kRailScenario = kSourceDir + "/scenarios/rail-optimized-4x4.yaml";
const std::string kBadScenarios = kSourceDir + "/tests/data/bad";

// Ping commands in flight at once: enough to hide the fork/exec latency on 2 cores.
constexpr int kParallelPings = 4;

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

class FabricTest : public LabTest {
 protected:
  // Brings the lab up from `scenario` and checks what `up` promises to print.
  static void up(const LabGuard& lab, const std::string& scenario) {
    Outcome o = lab.up(scenario);
    ASSERT_EQ(o.status, 0) << o;
    EXPECT_TRUE(o.out.starts_with("lab " + lab.name() + " up in ")) << o;
  }

  static void status_json(const LabGuard& lab, std::string* json) {
    Outcome o = fabemu({"status", lab.name(), "--json"});
    ASSERT_EQ(o.status, 0) << o;
    *json = o.out;
  }

  static void host_names(const LabGuard& lab, std::vector<std::string>* hosts) {
    std::string json;
    ASSERT_NO_FATAL_FAILURE(status_json(lab, &json));
    for (const auto& [name, address] : host_addresses(json)) hosts->push_back(name);
  }

  // "src -> dst: ..." for every ordered pair of `hosts` where `exec src -- ping dst` failed.
  static std::vector<std::string> unreachable_pairs(const LabGuard& lab,
                                                    const std::vector<std::string>& hosts) {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const auto& src : hosts)
      for (const auto& dst : hosts)
        if (src != dst) pairs.emplace_back(src, dst);
    return unreachable_pairs(lab, pairs);
  }

  static std::vector<std::string> unreachable_pairs(
      const LabGuard& lab, const std::vector<std::pair<std::string, std::string>>& pairs) {
    std::vector<Argv> pings;
    for (const auto& [src, dst] : pairs)
      pings.push_back(
          fabemu_argv({"exec", lab.name() + ":" + src, "--", "ping", "-c1", "-W2", "-q", dst}));
    std::vector<Outcome> results = run_all(pings, kParallelPings);
    std::vector<std::string> failed;
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (results[i].status == 0) continue;
      // fabemu's complaint if there is one, else ping's summary ("1 packets transmitted, 0 ...").
      std::string said = trim(results[i].err.empty() ? results[i].out : results[i].err);
      said = said.substr(said.find_last_of('\n') + 1);
      failed.push_back(pairs[i].first + " -> " + pairs[i].second + ": exit " +
                       std::to_string(results[i].status) + ": " + said);
    }
    return failed;
  }
};

// The tests of what every fabric must do, once with router switches and once with Open vSwitch
// bridges (the kernel datapath where the kernel has it, as in the VM lane, else userspace).
class SwitchTest : public FabricTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    FabricTest::SetUp();
    if (IsSkipped() || !ovs()) return;
    for (const char* tool : {"ovs-vswitchd", "ovsdb-server", "ovs-vsctl", "ovs-ofctl"})
      if (!find_tool(tool))
        GTEST_SKIP() << tool << " is not installed (openvswitch-switch): fabric.switch: ovs "
                     << "cannot be tested here";
  }
  bool ovs() const { return GetParam() == "ovs"; }
  // The scenario file with this test's switches; router: the file itself.
  std::string scenario(const std::string& path) {
    if (!ovs()) return path;
    std::string text = read_text(path);
    const std::string router = "switch: router";
    const size_t at = text.find(router);
    if (at == std::string::npos) {
      ADD_FAILURE() << path << " does not say switch: router";
      return path;
    }
    text.replace(at, router.size(), "switch: ovs");
    copies_.push_back(std::make_unique<TempScenario>(text));
    return copies_.back()->path();
  }
  // Where switch `sw`'s port towards `peer` is: its namespace's path and interface name.
  std::pair<std::string, std::string> switch_port(const LabGuard& lab, const std::string& sw,
                                                  const std::string& peer) const {
    if (ovs()) return {netns_path(lab.name(), "ovs"), sw + "-" + peer};
    return {netns_path(lab.name(), sw), peer};
  }
  void spine_packets_for_flows(const std::string& ecmp_hash, const std::string& suffix,
                               std::map<std::string, uint64_t>* per_spine);

 private:
  std::vector<std::unique_ptr<TempScenario>> copies_;
};

INSTANTIATE_TEST_SUITE_P(Switch, SwitchTest, ::testing::Values("router", "ovs"),
                         [](const auto& info) { return info.param; });

// ---------------------------------------------------------------------------------------------
// Reachability

TEST_P(SwitchTest, LeafSpineEveryHostPingsEveryOtherByName) {
  LabGuard lab(lab_name("ls"));
  ASSERT_NO_FATAL_FAILURE(up(lab, scenario(kDefaultScenario)));
  std::vector<std::string> hosts;
  ASSERT_NO_FATAL_FAILURE(host_names(lab, &hosts));
  ASSERT_EQ(hosts.size(), 8u);  // 4 leaves x 2 hosts

  EXPECT_EQ(unreachable_pairs(lab, hosts), std::vector<std::string>{});
  if (ovs()) {  // the kernel's datapath wherever the kernel has one (the VM lane), as promised
    std::string json;
    ASSERT_NO_FATAL_FAILURE(status_json(lab, &json));
    EXPECT_EQ(json_string_field(json, "datapath"),
              probe_ovs_kernel_datapath() ? "kernel" : "userspace")
        << json_string_field(json, "reason");
  }
  for (const auto& host : hosts) {
    Outcome o = lab.exec(host, {"hostname"});
    EXPECT_EQ(o.status, 0) << o;
    EXPECT_EQ(trim(o.out), host);
  }
}

TEST_P(SwitchTest, FatTreeK4EveryHostPingsEveryOther) {
  LabGuard lab(lab_name("ft"));
  ASSERT_NO_FATAL_FAILURE(up(lab, scenario(kFatTreeScenario)));
  std::vector<std::string> hosts;
  ASSERT_NO_FATAL_FAILURE(host_names(lab, &hosts));
  ASSERT_EQ(hosts.size(), 16u);  // k^3/4

  EXPECT_EQ(unreachable_pairs(lab, hosts), std::vector<std::string>{});
}

TEST_P(SwitchTest, RailOptimizedReachesAllAndKeepsNodeTrafficOnScaleUp) {
  LabGuard lab(lab_name("ro"));
  ASSERT_NO_FATAL_FAILURE(up(lab, scenario(kRailScenario)));
  std::string json;
  ASSERT_NO_FATAL_FAILURE(status_json(lab, &json));
  std::map<std::string, std::string> address;
  std::vector<std::string> hosts;
  for (const auto& [name, ip] : host_addresses(json)) {
    hosts.push_back(name);
    address[name] = ip;
  }
  ASSERT_EQ(hosts.size(), 16u);  // 4 nodes x 4 GPUs

  EXPECT_EQ(unreachable_pairs(lab, hosts), std::vector<std::string>{});
  // GPUs of one node talk over the scale-up NIC (eth1); other nodes are reached through the rail.
  Outcome same_node = lab.exec("n1-g1", {"ip", "route", "get", address["n1-g2"]});
  EXPECT_EQ(same_node.status, 0) << same_node;
  EXPECT_NE(same_node.out.find(" dev eth1 "), std::string::npos) << same_node.out;
  Outcome other_node = lab.exec("n1-g1", {"ip", "route", "get", address["n2-g2"]});
  EXPECT_EQ(other_node.status, 0) << other_node;
  EXPECT_NE(other_node.out.find(" dev eth0 "), std::string::npos) << other_node.out;
}

TEST_F(FabricTest, IpNetnsExecResolvesNodeNames) {
  LabGuard lab(lab_name("ip"));
  ASSERT_NO_FATAL_FAILURE(up(lab, kDefaultScenario));
  // iproute2 bind-mounts /etc/netns/NS/* over /etc, so h2 resolves as it does under `exec`.
  Outcome o = run({*find_tool("ip"), "netns", "exec", "fabemu-" + lab.name() + "-h1", "ping", "-c1",
                   "-W2", "h2"});
  EXPECT_EQ(o.status, 0) << o;
  EXPECT_NE(o.out.find("PING h2 ("), std::string::npos) << o;
  EXPECT_NE(o.out.find(" 1 received"), std::string::npos) << o;
}

// The main job on the default scenario: reachability, then its Gloo allreduce over TCP across
// all 8 hosts, checked element by element on every rank, then nothing left behind.
TEST_F(FabricTest, RunReportsFullReachabilityAndACorrectAllreduceAndLeavesNothing) {
  const std::string name = lab_name("run");
  const Snapshot before = Snapshot::take(name);
  LabGuard lab(name);
  TempScenario report("");  // a directory for the report, gone with the test
  const std::string dir = report.path() + ".d";
  Outcome o =
      fabemu({"run", kDefaultScenario, "--lab", name, "--accept-degraded", "--report", dir}, 240s);
  EXPECT_EQ(o.status, 0) << o;
  const nlohmann::json records = report_json(dir);
  const std::vector<nlohmann::json> header = records_of(records, "run");
  ASSERT_EQ(header.size(), 1u) << o;
  EXPECT_EQ(header[0]["reachable_pairs"], header[0]["pairs"]) << header[0];
  EXPECT_GT(header[0]["pairs"].get<int>(), 0) << header[0];
  EXPECT_TRUE(step_ok_and_correct(records, 0, 1)) << o;
  for (const nlohmann::json& r : step_results(records, 0)) {
    EXPECT_EQ(r["collective"], "allreduce") << r;
    EXPECT_EQ(r["library"], "gloo") << r;
    EXPECT_EQ(r["transport"], "tcp") << r;
    EXPECT_EQ(r["ranks"], 8) << r;
  }
  EXPECT_EQ(Snapshot::take(name), before);
}

// ---------------------------------------------------------------------------------------------
// ECMP

constexpr int kFlows = 256;
constexpr int kSpines = 4;
constexpr uint16_t kFirstSourcePort = 40000, kDestinationPort = 9000;

std::string two_leaf_scenario(const std::string& ecmp_hash, const std::string& switches) {
  return "name: ecmp\n"
         "seed: 1\n"
         "topology: {kind: leaf-spine, leaves: 2, spines: " +
         std::to_string(kSpines) +
         ", hosts_per_leaf: 1}\n"
         "fabric: {switch: " +
         switches + ", ecmp_hash: " + ecmp_hash + "}\nrdma: {enabled: off}\n";
}

// From a thread inside `netns`, sends one datagram from each of kFlows source ports to dst.
// Returns what went wrong, or "".
std::string send_udp_flows(const std::string& netns, const std::string& dst) {
  std::string error;
  std::thread sender([&] {
    // setns() moves this thread only; it ends here, so it never needs to go back.
    auto ns = open_namespace(netns);
    if (!ns) return void(error = ns.error().what());
    if (auto r = enter_namespace(ns->get(), CLONE_NEWNET, netns); !r)
      return void(error = r.error().what());
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(kDestinationPort);
    if (::inet_pton(AF_INET, dst.c_str(), &to.sin_addr) != 1)
      return void(error = "bad address '" + dst + "'");
    const char payload[] = "fabemu ecmp probe";
    for (int i = 0; i < kFlows; ++i) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      from.sin_port = htons(static_cast<uint16_t>(kFirstSourcePort + i));
      UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
      if (!sock.valid() ||
          ::bind(sock.get(), reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
          ::sendto(sock.get(), payload, sizeof payload, 0, reinterpret_cast<sockaddr*>(&to),
                   sizeof to) != static_cast<ssize_t>(sizeof payload))
        return void(error = "flow " + std::to_string(i) + ": " + std::strerror(errno));
      // Paced, so no datagram is dropped from a queue waiting for ARP on a fresh path.
      std::this_thread::sleep_for(200us);
    }
  });
  sender.join();
  return error;
}

std::map<std::string, uint64_t> tx_packets(const std::string& netns) {
  std::map<std::string, uint64_t> out;
  auto ifs = read_interfaces(netns);
  if (!ifs) ADD_FAILURE() << ifs.error().what();
  if (ifs)
    for (const InterfaceState& s : *ifs) out[s.name] = s.tx_packets;
  return out;
}

// Packets leaf1 sent up each spine, by spine name.
std::map<std::string, uint64_t> spine_tx(const std::string& netns,
                                         const std::map<std::string, std::string>& port_of) {
  const auto all = tx_packets(netns);
  std::map<std::string, uint64_t> out;
  for (const auto& [spine, port] : port_of)
    if (auto it = all.find(port); it != all.end()) out[spine] = it->second;
  return out;
}

std::string describe(const std::map<std::string, uint64_t>& per_spine) {
  std::string out;
  for (const auto& [port, packets] : per_spine) out += port + "=" + std::to_string(packets) + " ";
  return out;
}

// Brings up a 2-leaf, 4-spine lab with `ecmp_hash`, sends the flows from h1 to h2, and counts
// the packets leaf1 sent up each spine meanwhile.
void SwitchTest::spine_packets_for_flows(const std::string& ecmp_hash, const std::string& suffix,
                                         std::map<std::string, uint64_t>* per_spine) {
  TempScenario scenario(two_leaf_scenario(ecmp_hash, GetParam()));
  LabGuard lab(lab_name(suffix));
  Outcome o = lab.up(scenario.path());
  ASSERT_EQ(o.status, 0) << o;
  Outcome status = fabemu({"status", lab.name(), "--json"});
  ASSERT_EQ(status.status, 0) << status;
  std::string h2;
  for (const auto& [name, address] : host_addresses(status.out))
    if (name == "h2") h2 = address;
  ASSERT_FALSE(h2.empty()) << status.out;
  // Resolves the hosts' neighbours first, so that the flows are all the traffic we count.
  Outcome ping = lab.exec("h1", {"ping", "-c1", "-W2", "-q", "h2"});
  ASSERT_EQ(ping.status, 0) << ping;

  std::string netns;
  std::map<std::string, std::string> port_of;  // spine -> leaf1's port towards it
  for (int s = 1; s <= kSpines; ++s) {
    const std::string spine = "spine" + std::to_string(s);
    auto [ns, port] = switch_port(lab, "leaf1", spine);
    netns = ns;
    port_of[spine] = port;
  }
  const std::map<std::string, uint64_t> before = spine_tx(netns, port_of);
  ASSERT_EQ(before.size(), port_of.size()) << "leaf1 lacks a port to some spine in " << netns;
  ASSERT_EQ(send_udp_flows(netns_path(lab.name(), "h1"), h2), "");

  // Forwarding runs in softirq (or ovs-vswitchd) after sendto() returns: wait until the
  // counters have caught up.
  const auto deadline = Clock::now() + 3s;
  for (;;) {
    std::map<std::string, uint64_t> after = spine_tx(netns, port_of);
    uint64_t total = 0;
    for (const auto& [spine, count] : before) {
      (*per_spine)[spine] = after.count(spine) ? after[spine] - count : 0;
      total += (*per_spine)[spine];
    }
    if (total >= kFlows || Clock::now() > deadline) break;
    std::this_thread::sleep_for(20ms);
  }
  uint64_t total = 0;
  for (const auto& [port, packets] : *per_spine) total += packets;
  EXPECT_GE(total, static_cast<uint64_t>(kFlows));
}

TEST_P(SwitchTest, EcmpL4HashSpreadsFlowsOverEverySpine) {
  std::map<std::string, uint64_t> per_spine;
  ASSERT_NO_FATAL_FAILURE(spine_packets_for_flows("l4", "e4", &per_spine));
  // With a uniform hash a spine's count is Binomial(256, 1/4): mean 64, sd 6.9. Half the mean
  // is 4.6 sd below it, so a fair hash fails this with probability about 1e-5 per run.
  for (const auto& [port, packets] : per_spine)
    EXPECT_GE(packets, static_cast<uint64_t>(kFlows / kSpines / 2))
        << port << " carried too few flows: " << describe(per_spine);
}

TEST_P(SwitchTest, EcmpL3HashKeepsOneHostPairOnOneSpine) {
  std::map<std::string, uint64_t> per_spine;
  ASSERT_NO_FATAL_FAILURE(spine_packets_for_flows("l3", "e3", &per_spine));
  // Addresses alone pick the path: every flow takes the same spine. The others may see a few
  // ARP packets (the return path can cross another spine), nothing like a share of the flows.
  constexpr uint64_t kArpAllowance = 4;
  auto busiest = std::max_element(per_spine.begin(), per_spine.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
  EXPECT_GE(busiest->second, static_cast<uint64_t>(kFlows)) << describe(per_spine);
  for (const auto& [port, packets] : per_spine) {
    if (port == busiest->first) continue;
    EXPECT_LE(packets, kArpAllowance) << port << ": " << describe(per_spine);
  }
}

// ---------------------------------------------------------------------------------------------
// Lifecycle

TEST_P(SwitchTest, DownLeavesNothingAndEndsProcessesInTheLab) {
  const std::string name = lab_name("dn");
  const Snapshot before = Snapshot::take(name);
  ASSERT_EQ(before.lab_objects, std::set<std::string>{}) << "left over from an earlier run";
  LabGuard lab(name);
  ASSERT_NO_FATAL_FAILURE(up(lab, scenario(kDefaultScenario)));
  EXPECT_NE(Snapshot::take(name).lab_objects, std::set<std::string>{});  // the snapshot sees labs

  // A user's long-running program inside h1, started the way users start one.
  Process sleeper = spawn(fabemu_argv({"exec", name + ":h1", "--", "sleep", "600"}));
  const auto h1 = ns_id(netns_path(name, "h1"));
  ASSERT_TRUE(h1.has_value());
  const std::string proc = "/proc/" + std::to_string(sleeper.pid());
  const auto deadline = Clock::now() + 5s;
  while (!(ns_id(proc + "/ns/net") == h1 && trim(read_text(proc + "/comm")) == "sleep")) {
    ASSERT_LT(Clock::now(), deadline) << "sleep never started inside h1";
    std::this_thread::sleep_for(5ms);
  }
  const pid_t sleep_pid = sleeper.pid();
  const std::set<pid_t> inside = processes_in(lab_namespaces(name));
  EXPECT_TRUE(inside.count(sleep_pid));
  if (ovs()) {  // the lab's own OVS daemons, which `down` must end too
    std::multiset<std::string> names;
    for (pid_t pid : inside)
      names.insert(trim(read_text("/proc/" + std::to_string(pid) + "/comm")));
    EXPECT_EQ(names.count("ovsdb-server"), 1u);
    EXPECT_EQ(names.count("ovs-vswitchd"), 1u);
  }

  Outcome down = lab.down();
  ASSERT_EQ(down.status, 0) << down;
  std::optional<int> status = wait_for(sleeper, 5s);
  EXPECT_TRUE(status.has_value()) << "`down` left the sleep inside h1 running";
  // The sleep was reaped above; anything else that was inside must be gone as well.
  for (pid_t pid : inside) {
    if (pid == sleep_pid) continue;
    // A daemon that detached is reaped by init, whenever init gets to it: dead is enough. A
    // process killed by `down` may still be on its way out (exiting takes the kernel a moment
    // on a busy machine): give it a few seconds to get there.
    auto gone = [pid] {
      const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
      const bool zombie = stat.find(") Z ") != std::string::npos;
      return (::kill(pid, 0) != 0 && errno == ESRCH) || zombie;
    };
    for (int i = 0; i < 300 && !gone(); ++i) std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(gone()) << "process " << pid << " survived";
  }
  EXPECT_EQ(Snapshot::take(name), before);
}

TEST_P(SwitchTest, TwoLabsCoexistAndDownOfOneSparesTheOther) {
  LabGuard first(lab_name("ca")), second(lab_name("cb"));
  ASSERT_NO_FATAL_FAILURE(up(first, scenario(kDefaultScenario)));
  ASSERT_NO_FATAL_FAILURE(up(second, scenario(kDefaultScenario)));
  std::string json_first, json_second;
  ASSERT_NO_FATAL_FAILURE(status_json(first, &json_first));
  ASSERT_NO_FATAL_FAILURE(status_json(second, &json_second));
  const std::string pool_first = json_string_field(json_first, "pool");
  const std::string pool_second = json_string_field(json_second, "pool");
  EXPECT_FALSE(pool_first.empty()) << json_first;
  EXPECT_NE(pool_first, pool_second);

  // Across leaves and spines, both ways.
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"h1", "h8"}, {"h8", "h1"}, {"h3", "h6"}, {"h2", "h1"}};
  EXPECT_EQ(unreachable_pairs(first, pairs), std::vector<std::string>{});
  EXPECT_EQ(unreachable_pairs(second, pairs), std::vector<std::string>{});

  Outcome down = first.down();
  ASSERT_EQ(down.status, 0) << down;
  EXPECT_EQ(Snapshot::take(first.name()).lab_objects, std::set<std::string>{});
  EXPECT_EQ(unreachable_pairs(second, pairs), std::vector<std::string>{});
  std::string json_after;
  ASSERT_NO_FATAL_FAILURE(status_json(second, &json_after));
  EXPECT_EQ(json_string_field(json_after, "state"), "up");
}

// `up SCENARIO --lab NAME -q` started, returned once its journal exists (a failure after 60 s
// without one).
Process start_up_until_journal(const std::string& scenario, const std::string& name) {
  Process up = spawn(fabemu_argv({"up", scenario, "--lab", name, "-q"}));
  const std::string journal = run_dir(name) + "/journal";
  const auto deadline = Clock::now() + 60s;
  while (!std::filesystem::exists(journal)) {
    if (Clock::now() > deadline) {
      ADD_FAILURE() << "no journal at " << journal;
      break;
    }
    std::this_thread::sleep_for(100us);
  }
  return up;
}

TEST_P(SwitchTest, KillDuringUpThenDownLeavesNothing) {
  // 128 hosts and 80 switches: up takes long enough to be caught in the middle.
  TempScenario scenario("name: big\nseed: 1\ntopology: {kind: fat-tree, k: 8}\nfabric: {switch: " +
                        GetParam() + "}\nrdma: {enabled: off}\n");
  // 1.5 s: with OVS switches, while the daemons start or the bridges are being configured.
  const int delays_ms[] = {0, 20, 80, 200, 1500};
  int caught_midway = 0;
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("SIGKILL " + std::to_string(delays_ms[i]) + " ms after the journal appeared");
    const std::string name = lab_name("k" + std::to_string(i));
    const Snapshot before = Snapshot::take(name);
    LabGuard lab(name);
    Process up = start_up_until_journal(scenario.path(), name);
    ASSERT_FALSE(HasFailure());
    const std::string journal = run_dir(name) + "/journal";
    std::this_thread::sleep_for(std::chrono::milliseconds(delays_ms[i]));
    ::kill(up.pid(), SIGKILL);
    std::optional<int> status = wait_for(up, 5s);
    ASSERT_TRUE(status.has_value());
    // 0 when up had already finished; either way down must find everything.
    EXPECT_TRUE(*status == 128 + SIGKILL || *status == 0) << *status;
    if (*status != 0 && !read_text(journal).ends_with("complete\n")) ++caught_midway;

    Outcome down = lab.down();
    EXPECT_EQ(down.status, 0) << down;
    EXPECT_EQ(Snapshot::take(name), before);
  }
  EXPECT_GT(caught_midway, 0) << "up always finished before the kill: nothing was tested";
}

// ^C (SIGINT) or SIGTERM while `up` builds a 512-host lab: up takes down what it made and exits
// as a process ended by the signal does (130, 143), leaving nothing for `down` to find.
TEST_F(FabricTest, InterruptedUpLeavesNothingAndExits130) {
  TempScenario scenario(
      "name: big\ntopology: {kind: leaf-spine, leaves: 16, spines: 4, hosts_per_leaf: 32}\n"
      "rdma: {enabled: off}\n");
  // At once, and while the namespaces and veths are being made.
  const std::pair<int, int> cases[] = {{SIGINT, 0}, {SIGINT, 300}, {SIGTERM, 150}};
  for (const auto& [sig, delay_ms] : cases) {
    SCOPED_TRACE(std::string(strsignal(sig)) + " " + std::to_string(delay_ms) +
                 " ms after the journal appeared");
    const std::string name = lab_name("c" + std::to_string(delay_ms));
    const Snapshot before = Snapshot::take(name);
    LabGuard lab(name);
    Process up = start_up_until_journal(scenario.path(), name);
    ASSERT_FALSE(HasFailure());
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(up.pid(), sig);
    std::optional<int> status = wait_for(up, 60s);
    ASSERT_TRUE(status.has_value()) << "up went on after the signal";
    if (*status == 0) GTEST_SKIP() << "up finished before the signal came: nothing was tested";
    EXPECT_EQ(*status, 128 + sig);
    // Nothing left, before any `down`.
    EXPECT_FALSE(std::filesystem::exists(run_dir(name)));
    EXPECT_EQ(Snapshot::take(name), before);
  }
}

// `down --json` waited for the kernel to free the lab to the end (kernel_seconds, no note).
bool kernel_waited(const Outcome& down) {
  auto j = nlohmann::json::parse(down.out, nullptr, false);
  return j.is_object() && j["kernel_seconds"].is_number() && j["kernel_note"].is_null();
}

// A veth from a node's namespace into a namespace of the test's own: it goes when the kernel
// unregisters the node's devices, which it does once nothing holds the node's namespace.
class FreedProbe {
 public:
  void attach(const std::string& lab, const std::string& node) {
    std::thread([&] {
      ASSERT_EQ(::unshare(CLONE_NEWNET), 0) << std::strerror(errno);
      auto fd = open_namespace("/proc/thread-self/ns/net");
      ASSERT_TRUE(fd) << fd.error().what();
      watcher_ = std::move(*fd);
      auto ns = open_namespace(netns_path(lab, node));
      ASSERT_TRUE(ns) << ns.error().what();
      auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, 5s);
      ASSERT_TRUE(rtnl) << rtnl.error().what();
      auto veth =
          create_veth_pair(*rtnl, {ns->get(), "probe0"}, {watcher_.get(), "probe1"}, 1500, 0);
      ASSERT_TRUE(veth) << veth.error().what();
      ifindex_ = if_nametoindex("probe1");
    }).join();
    ASSERT_NE(ifindex_, 0u);
  }

  bool freed() const {
    bool gone = false;
    std::thread([&] {
      ASSERT_TRUE(enter_namespace(watcher_.get(), CLONE_NEWNET, "the watcher"));
      char name_of[IF_NAMESIZE];
      gone = if_indextoname(ifindex_, name_of) == nullptr;
    }).join();
    return gone;
  }

 private:
  UniqueFd watcher_;
  unsigned ifindex_ = 0;
};

// `down` returns once the kernel has freed the lab, not only dropped it: h1's namespace is gone
// the moment `down` returns.
TEST_F(FabricTest, DownReturnsOnceTheKernelHasFreedTheLab) {
  const std::string name = lab_name("kf");
  LabGuard lab(name);
  ASSERT_NO_FATAL_FAILURE(up(lab, kDefaultScenario));
  FreedProbe h1;
  ASSERT_NO_FATAL_FAILURE(h1.attach(name, "h1"));
  Outcome down = fabemu({"down", name, "--json"}, 90s);
  ASSERT_EQ(down.status, 0) << down;
  EXPECT_TRUE(kernel_waited(down)) << down;
  EXPECT_TRUE(h1.freed()) << "h1's namespace is still there";
}

// A closed socket with data its peer never acknowledged lives on in its namespace, retransmitting.
// When a lossy link ate the peer's reset (its process ended by `down`), it kept retransmitting
// into the removed links for minutes and held its namespace so; once that was the namespace
// `down` waits on, `down` waited 60 s (seen in CI after TCP over a 10% corrupt link). `down`
// aborts the TCP sockets the lab's processes leave: h1 is freed as fast as the rest.
TEST_F(FabricTest, DownFreesAHostWhoseClosedSocketStillRetransmits) {
  const auto python = find_tool("python3");
  if (!python) GTEST_SKIP() << "python3 is not installed";
  const std::string name = lab_name("ko");
  LabGuard lab(name);
  ASSERT_NO_FATAL_FAILURE(up(lab, kDefaultScenario));
  // h8 accepts and never reads (a 4 KiB receive buffer); h1 fills its send buffer and closes.
  Process receiver = spawn({kFabemu, "exec", name + ":h8", "--", *python, "-c",
                            "import socket, time\n"
                            "s = socket.socket()\n"
                            "s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)\n"
                            "s.bind(('0.0.0.0', 5402)); s.listen()\n"
                            "c, _ = s.accept(); time.sleep(120)\n"});
  Outcome sent = lab.exec("h1", {*python, "-c",
                                 "import socket, time\n"
                                 "for _ in range(50):\n"
                                 "  try: s = socket.create_connection(('h8', 5402)); break\n"
                                 "  except OSError: time.sleep(0.1)\n"
                                 "s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)\n"
                                 "s.setblocking(False); n = 0\n"
                                 "try:\n"
                                 "  while True: n += s.send(b'x' * 65536)\n"
                                 "except BlockingIOError: pass\n"
                                 "print('sent', n); s.close()\n"});
  ASSERT_EQ(sent.status, 0) << sent;
  // h8's reset, when `down` ends it, never reaches h1.
  Outcome lossy = fabemu({"link", "set", name, "leaf1>h1", "--loss", "100%"});
  ASSERT_EQ(lossy.status, 0) << lossy;
  Outcome left = lab.exec("h1", {"ss", "-tan", "state", "fin-wait-1"});
  ASSERT_NE(left.out.find(":5402"), std::string::npos) << "no closed socket left in h1\n" << left;
  FreedProbe h1;
  ASSERT_NO_FATAL_FAILURE(h1.attach(name, "h1"));
  const auto start = Clock::now();
  Outcome down = fabemu({"down", name, "--json"}, 90s);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_EQ(down.status, 0) << down;
  std::printf("down with a retransmitting socket in h1: %.2f s\n", seconds);
  EXPECT_TRUE(kernel_waited(down)) << down;
  EXPECT_TRUE(h1.freed()) << "h1's namespace is still held";
}

// `up` creates the journal file, then writes it: a kill in between leaves the run directory with
// an empty (or cut) journal and nothing else. `down` must clean that up like any other crash.
TEST_F(FabricTest, DownAfterKillBeforeTheJournalWasWritten) {
  const std::string name = lab_name("kj");
  const Snapshot before = Snapshot::take(name);
  for (const std::string journal : {"", "fabemu-jour"}) {
    SCOPED_TRACE("journal holds '" + journal + "'");
    LabGuard lab(name);
    std::filesystem::create_directories(run_dir(name));
    std::ofstream(run_dir(name) + "/journal") << journal;
    Outcome down = lab.down();
    EXPECT_EQ(down.status, 0) << down;
    EXPECT_EQ(Snapshot::take(name), before);
    // Without this, a failing `down` would leave a lab that no later `down` removes either.
    std::filesystem::remove_all(run_dir(name));
  }
}

TEST_F(FabricTest, MalformedScenariosTouchNothing) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(kBadScenarios))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());

  LabGuard lab(lab_name("bad"));
  const Snapshot before = Snapshot::take(lab.name());
  const std::regex position(R"(^\d+:\d+: \S)");
  for (const auto& file : files) {
    SCOPED_TRACE(file);
    Outcome o = fabemu({"up", file, "--lab", lab.name()});
    EXPECT_EQ(o.status, 2) << o;
    const std::string prefix = "fabemu: " + file + ":";
    ASSERT_TRUE(o.err.starts_with(prefix)) << o;
    EXPECT_TRUE(std::regex_search(o.err.substr(prefix.size()), position))
        << "no line:column: " << o.err;
    EXPECT_EQ(Snapshot::take(lab.name()), before);
  }
}

// ---------------------------------------------------------------------------------------------
// Hosts as containers

TEST_F(FabricTest, HostsHaveTheirOwnTmpCgroupAndRank) {
  // Where h1's memory limit shows: the v1 memory hierarchy, else a v2 one offering memory (on a
  // hybrid machine the v2 mount has no controllers).
  const std::map<std::string, std::string> cgroups = cgroup_mounts();
  std::string memory_root, memory_limit_file;
  if (cgroups.count("memory")) {
    memory_root = cgroups.at("memory");
    memory_limit_file = "memory.limit_in_bytes";
  } else if (cgroups.count("2") &&
             read_text(cgroups.at("2") + "/cgroup.controllers").find("memory") !=
                 std::string::npos) {
    memory_root = cgroups.at("2");
    memory_limit_file = "memory.max";
  }
  const bool limits = !memory_root.empty();
  TempScenario scenario(
      "name: hosts\nseed: 1\n"
      "topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2}\n"
      "rdma: {enabled: off}\n" +
      std::string(limits ? "hosts: {cpu: 0.5, memory: 256M}\n" : ""));
  LabGuard lab(lab_name("hc"));
  ASSERT_NO_FATAL_FAILURE(up(lab, scenario.path()));

  const std::string marker = "/tmp/fabemu-" + lab.name() + "-marker";
  std::filesystem::remove(marker);  // from an earlier run that failed
  Outcome touch = lab.exec("h1", {"touch", marker});
  ASSERT_EQ(touch.status, 0) << touch;
  EXPECT_EQ(lab.exec("h1", {"test", "-e", marker}).status, 0) << "h1 lost its own file";
  EXPECT_EQ(lab.exec("h2", {"test", "-e", marker}).status, 1) << "h2 sees h1's /tmp";
  EXPECT_FALSE(std::filesystem::exists(marker)) << "h1 wrote into the machine's /tmp";
  std::filesystem::remove(marker);

  Outcome ranks = fabemu({"exec", lab.name(), "--all", "--", "printenv", "RANK"});
  ASSERT_EQ(ranks.status, 0) << ranks;
  std::multiset<int> seen;
  std::istringstream lines(ranks.out);
  const std::regex tagged(R"(^\[h\d+\s*\] (\d+)$)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, tagged)) << line;
    if (!m.empty()) seen.insert(std::stoi(m[1].str()));
  }
  EXPECT_EQ(seen, (std::multiset<int>{0, 1, 2, 3})) << ranks.out;

  if (!limits) GTEST_SKIP() << "cgroup part not run: no cgroup v2 and no v1 memory hierarchy";
  Outcome self = lab.exec("h1", {"cat", "/proc/self/cgroup"});
  ASSERT_EQ(self.status, 0) << self;
  const std::string rel = "fabemu/" + lab.name() + "/h1";
  EXPECT_NE(self.out.find(":/" + rel + "\n"), std::string::npos) << self.out;
  EXPECT_EQ(trim(read_text(memory_root + "/" + rel + "/" + memory_limit_file)), "268435456");
}

}  // namespace
}  // namespace fabemu::itest
