// Drops the link model makes on a host's own port are lost on the wire, as on a switch's port:
// the sending host's programs are not told (ping counts the echo lost instead of sending it again,
// TCP retransmits instead of seeing local congestion). One test per kind of drop, each against
// the same setting on a switch's port in the same lab, measured at the same time. A full queue
// is the exception: on a host it is its NIC's queue, and the host is told, as by a qdisc.
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "doctor/capabilities.h"
#include "doctor/system_probe.h"
#include "lab_fixture.h"

namespace fabemu::itest {
namespace {

// h1, h2 on leaf1; h3, h4 on leaf2. The host's own port is h1>leaf1 (h1 -> h3 crosses it), the
// switch's port leaf2>h4 (h2 -> h4 crosses it); no other direction is on both paths, so the two
// measurements run at once.
constexpr const char* kLab = R"(name: wire
seed: 11
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2}
fabric: {mtu: 1500, lossless: {dscp: [26]}}
links:
  default: {rate: 100mbit}
rdma: {enabled: off}
)";

constexpr const char* kHostPort = "h1>leaf1";
constexpr const char* kSwitchPort = "leaf2>h4";

struct Ping {
  int transmitted = -1, received = -1;
  std::string output;
  double loss() const { return transmitted > 0 ? 1.0 - double(received) / transmitted : -1; }
};

std::ostream& operator<<(std::ostream& os, const Ping& p) {
  return os << p.received << "/" << p.transmitted << " answered\n" << p.output;
}

struct Tcp {
  uint64_t retransmits = 0, bytes = 0;
  double received_bps = 0;  // goodput, by the receiver
  std::string output;
  double segments() const { return double(bytes) / 1448; }
};

// 99.9% of a binomial sample's loss fraction falls within p +- this (the normal approximation;
// n p (1 - p) >= 4 for the rates below). Not 99%: a test makes ten such checks, and which
// frames a seeded port loses depends on how many crossed it before (TCP's count varies).
double binomial999(double p, int n) {
  return 3.291 * std::sqrt(p * (1 - p) / n);
}

class WireLossTest : public LabTest {
 protected:
  void SetUp() override {
    LabTest::SetUp();
    if (IsSkipped()) return;
    if (!find_tool("iperf3")) GTEST_SKIP() << "iperf3 is not installed";
  }

  void up(const std::string& suffix) {
    lab_.emplace(lab_name(suffix));
    Outcome o = lab_->up(sc_.path());
    ASSERT_EQ(o.status, 0) << o;
    // Neighbours resolved before anything is lost, so that ARP is not part of the count.
    for (const auto& [from, to] : {std::pair{"h1", "h3"}, std::pair{"h2", "h4"}})
      ASSERT_EQ(lab_->exec(from, {"/usr/bin/ping", "-c1", "-W5", to}).status, 0);
  }

  Outcome link(const Argv& args) {
    Argv full = {"link", args[0], lab_->name()};
    full.insert(full.end(), args.begin() + 1, args.end());
    return fabemu(full);
  }

  // Sets the same thing on the host's port and on the switch's.
  void set_both(const Argv& settings) {
    for (const char* dir : {kHostPort, kSwitchPort}) {
      Argv args = {"set", dir};
      args.insert(args.end(), settings.begin(), settings.end());
      Outcome o = link(args);
      ASSERT_EQ(o.status, 0) << o;
    }
  }

  static Argv ping_argv(const std::string& to, int count, const Argv& extra) {
    Argv a = {"/usr/bin/ping", "-q", "-c", std::to_string(count), "-W", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back(to);
    return a;
  }

  static Ping parse_ping(const Outcome& o) {
    Ping p;
    p.output = o.out + o.err;
    std::smatch m;
    if (std::regex_search(o.out, m, std::regex(R"((\d+) packets transmitted, (\d+) received)"))) {
      p.transmitted = std::stoi(m[1]);
      p.received = std::stoi(m[2]);
    }
    return p;
  }

  // Pings across the host's port (h1 -> h3) and the switch's (h2 -> h4) at once.
  std::pair<Ping, Ping> ping_both(int count, const Argv& extra = {"-i", "0.01"}) {
    std::vector<Argv> cmds;
    for (const auto& [from, to] : {std::pair{"h1", "h3"}, std::pair{"h2", "h4"}}) {
      Argv a = {"exec", lab_->name() + ":" + from, "--"};
      const Argv p = ping_argv(to, count, extra);
      a.insert(a.end(), p.begin(), p.end());
      cmds.push_back(fabemu_argv(a));
    }
    auto out = run_all(cmds, 2, 120s);
    return {parse_ping(out[0]), parse_ping(out[1])};
  }

  // A TCP flow of `seconds` from each sender (h1 -> h3, h2 -> h4) at once: what it sent and
  // retransmitted, by iperf3's own count.
  std::pair<Tcp, Tcp> tcp_both(int seconds, const Argv& extra = {}) {
    std::vector<Process> servers;
    for (const char* to : {"h3", "h4"})
      servers.push_back(spawn({kFabemu, "exec", lab_->name() + ":" + to, "--", *find_tool("iperf3"),
                               "-s", "-1", "-p", "5311"}));
    std::this_thread::sleep_for(500ms);
    std::vector<Argv> cmds;
    for (const auto& [from, to] : {std::pair{"h1", "h3"}, std::pair{"h2", "h4"}}) {
      Argv a = {
          kFabemu, "exec", lab_->name() + ":" + from, "--", *find_tool("iperf3"), "-c", to, "-p",
          "5311",  "-t",   std::to_string(seconds),   "-J"};
      a.insert(a.end(), extra.begin(), extra.end());
      cmds.push_back(a);
    }
    auto out = run_all(cmds, 2, std::chrono::seconds(seconds + 60));
    for (auto& s : servers) s.stop(0ms);
    std::pair<Tcp, Tcp> r;
    for (int i = 0; i < 2; ++i) {
      Tcp& t = i == 0 ? r.first : r.second;
      t.output = out[i].out + out[i].err;
      auto j = nlohmann::json::parse(out[i].out, nullptr, false);
      if (j.is_object() && j.contains("end") && j["end"].contains("sum_sent")) {
        t.retransmits = j["end"]["sum_sent"].value("retransmits", uint64_t(0));
        t.bytes = j["end"]["sum_sent"].value("bytes", uint64_t(0));
        t.received_bps = j["end"]["sum_received"].value("bits_per_second", 0.0);
      }
    }
    return r;
  }

  // Neither sender was told of a drop: ping sent exactly `count` echoes and said nothing of
  // buffers (a drop reported to the socket makes ping print "No buffer space available" or send
  // again).
  static void expect_silent(const Ping& p, int count, const char* where) {
    EXPECT_EQ(p.transmitted, count) << where << ": " << p;
    EXPECT_EQ(p.output.find("buffer space"), std::string::npos) << where << ": " << p;
    EXPECT_EQ(p.output.find("sendmsg"), std::string::npos) << where << ": " << p;
  }

  // Loss at `p` (a fraction) on both ports: each ping's loss within the binomial 99.9% interval.
  void expect_binomial(const Ping& host, const Ping& sw, double p, int count) {
    const double half = binomial999(p, count);
    std::printf("loss %g%%: host port %.3f, switch port %.3f (99.9%% interval %.3f..%.3f)\n",
                p * 100, host.loss(), sw.loss(), p - half, p + half);
    EXPECT_NEAR(host.loss(), p, half) << host;
    EXPECT_NEAR(sw.loss(), p, half) << sw;
  }

  // TCP met the drops as losses on both ports: it retransmitted, at comparable rates.
  void expect_retransmits(const Tcp& host, const Tcp& sw) {
    std::printf("TCP: host port %llu retransmits of %.0f segments, switch port %llu of %.0f\n",
                static_cast<unsigned long long>(host.retransmits), host.segments(),
                static_cast<unsigned long long>(sw.retransmits), sw.segments());
    ASSERT_GT(host.bytes, 0u) << host.output;
    ASSERT_GT(sw.bytes, 0u) << sw.output;
    EXPECT_GT(host.retransmits, 0u) << "TCP saw no loss on the host's own port\n" << host.output;
    EXPECT_GT(sw.retransmits, 0u) << sw.output;
  }

  // Every direction's counters so far, from `status --json`: (name, counters).
  std::vector<std::pair<std::string, nlohmann::json>> directions() {
    Outcome st = fabemu({"status", lab_->name(), "--json"});
    EXPECT_EQ(st.status, 0) << st;
    std::vector<std::pair<std::string, nlohmann::json>> out;
    auto j = nlohmann::json::parse(st.out, nullptr, false);
    if (!j.is_object()) return out;
    for (const auto& l : j["links"])
      for (const char* side : {"a_to_b", "b_to_a"})
        if (l.contains(side)) out.emplace_back(l[side]["direction"], l[side]["counters"]);
    return out;
  }

  // The link model's drops of every cause on `direction` so far.
  uint64_t drops(const std::string& direction) {
    for (const auto& [name, c] : directions())
      if (name == direction) {
        uint64_t n = 0;
        for (const char* k : {"drop_loss", "drop_queue", "drop_down", "drop_watchdog"})
          n += c.value(k, uint64_t(0));
        return n;
      }
    return 0;
  }

  // Every direction that paused so far: "h1>leaf1 12 pauses 340.1 ms; ...", for a failure's
  // message.
  std::string pauses() {
    std::string out;
    for (const auto& [name, c] : directions())
      if (const uint64_t n = c.value("pause_events", uint64_t(0)); n > 0) {
        char line[160];
        std::snprintf(line, sizeof line, "%s %llu pauses %.1f ms; ", name.c_str(),
                      static_cast<unsigned long long>(n),
                      double(c.value("pause_ns", uint64_t(0))) / 1e6);
        out += line;
      }
    return out.empty() ? "no direction paused" : out;
  }

  TempScenario sc_{kLab};
  std::optional<LabGuard> lab_;
};

TEST_F(WireLossTest, LossOnAHostsPortIsLostOnTheWireAsOnASwitchsPort) {
  up("wl");
  constexpr int kCount = 400;
  for (double p : {0.01, 0.10, 0.50}) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%g%%", p * 100);
    set_both({"--loss", pct});
    auto [host, sw] = ping_both(kCount);
    expect_silent(host, kCount, kHostPort);
    expect_silent(sw, kCount, kSwitchPort);
    expect_binomial(host, sw, p, kCount);
    if (p <= 0.10) {
      auto [th, ts] = tcp_both(3);
      expect_retransmits(th, ts);
      // Each lost segment is sent again at least once; at 1% and 10% TCP also keeps going.
      EXPECT_GE(double(th.retransmits), 0.5 * p * th.segments()) << th.output;
      EXPECT_GE(double(ts.retransmits), 0.5 * p * ts.segments()) << ts.output;
    }
  }
}

TEST_F(WireLossTest, BurstLossOnAHostsPortIsLostOnTheWire) {
  up("wb");
  // Gilbert-Elliott: into the bad state with 10%, out with 50%, everything lost there: 1/6 of
  // the frames in the long run, in bursts of 2 on average.
  set_both({"--loss-burst", "10%,50%"});
  constexpr int kCount = 1000;
  auto [host, sw] = ping_both(kCount, {"-i", "0.005"});
  expect_silent(host, kCount, kHostPort);
  expect_silent(sw, kCount, kSwitchPort);
  // Bursts make the count vary more than a binomial's: successive frames are correlated
  // (1 - p - r = 0.4), which inflates the variance (1 + 0.4) / (1 - 0.4) times.
  const double p = 0.10 / 0.60, half = binomial999(p, kCount) * std::sqrt(1.4 / 0.6);
  std::printf("burst loss: host port %.3f, switch port %.3f (expected %.3f +- %.3f)\n", host.loss(),
              sw.loss(), p, half);
  EXPECT_NEAR(host.loss(), p, half) << host;
  EXPECT_NEAR(sw.loss(), p, half) << sw;
  auto [th, ts] = tcp_both(3);
  expect_retransmits(th, ts);
}

TEST_F(WireLossTest, ADownHostPortLosesEverythingWithoutTellingTheSender) {
  up("wd");
  for (const char* dir : {kHostPort, kSwitchPort}) {
    Outcome o = link({"down", dir, "--no-reroute"});
    ASSERT_EQ(o.status, 0) << o;
  }
  constexpr int kCount = 20;
  auto [host, sw] = ping_both(kCount, {"-i", "0.05"});
  expect_silent(host, kCount, kHostPort);
  expect_silent(sw, kCount, kSwitchPort);
  EXPECT_EQ(host.received, 0) << host;
  EXPECT_EQ(sw.received, 0) << sw;
  // A datagram sent into the dead link leaves the sender without an error, as into a cut fibre.
  Outcome udp = lab_->exec("h1", {"/bin/bash", "-c", "echo x > /dev/udp/h3/9"});
  EXPECT_EQ(udp.status, 0) << udp;
}

// A tail drop is not the wire's: it is the port's own queue, which on a host is its NIC's, and
// a host's stack is told when its queue is full, as by any qdisc: ping waits and sends again
// (ENOBUFS), TCP backs off (local congestion) and keeps its link full. On a switch's port the
// same queue drops forwarded frames, which are lost.
TEST_F(WireLossTest, TailDropsOfAHostsOwnQueueAreToldToItsStackAsAQdiscsAre) {
  up("wq");
  // 2 Mbit/s with room for six full frames (TCP's own floor in a queue is two): a burst of 32
  // echoes overflows it.
  set_both({"--rate", "2mbit", "--queue", "10000"});
  constexpr int kCount = 32;
  const uint64_t sw0 = drops(kSwitchPort);
  auto [host, sw] = ping_both(kCount, {"-l", "32", "-s", "1400", "-i", "0.2"});
  const uint64_t sw_drops = drops(kSwitchPort) - sw0;
  std::printf("queue: host port lost %d of a burst of %d, switch port %d (%llu drops)\n",
              host.transmitted - host.received, kCount, sw.transmitted - sw.received,
              static_cast<unsigned long long>(sw_drops));
  EXPECT_EQ(host.received, kCount) << "h1's own queue lost an echo\n" << host;
  expect_silent(sw, kCount, kSwitchPort);
  EXPECT_NEAR(double(sw.transmitted - sw.received), double(sw_drops), 1) << sw;
  // TCP: its own full queue paces it; the switch's loses its segments, which it resends.
  const uint64_t ts0 = drops(kSwitchPort);
  auto [th, ts] = tcp_both(3);
  const uint64_t ts_drops = drops(kSwitchPort) - ts0;
  const double goodput = th.received_bps;
  std::printf(
      "TCP: host port %.2f Mbit/s of 2, %llu retransmits; switch port %llu drops, %llu "
      "retransmits\n",
      goodput / 1e6, static_cast<unsigned long long>(th.retransmits),
      static_cast<unsigned long long>(ts_drops), static_cast<unsigned long long>(ts.retransmits));
  EXPECT_GT(goodput, 0.8 * 2e6) << th.output;
  EXPECT_GT(ts_drops, 0u) << "TCP into a 6-frame queue at 2 Mbit/s";
  // Not one for one (a segment lost twice, a tail loss probe, the control connection's frames),
  // but of the same order.
  EXPECT_GE(double(ts.retransmits), 0.5 * double(ts_drops)) << ts.output;
}

TEST_F(WireLossTest, CorruptFramesFromAHostAreDiscardedByTheNextHop) {
  up("wc");
  set_both({"--corrupt", "10%"});
  constexpr int kCount = 400;
  auto [host, sw] = ping_both(kCount);
  expect_silent(host, kCount, kHostPort);
  expect_silent(sw, kCount, kSwitchPort);
  expect_binomial(host, sw, 0.10, kCount);
  auto [th, ts] = tcp_both(3);
  expect_retransmits(th, ts);
}

// PFC's watchdog: h1's lossless traffic (DSCP 26) to h3 at four times leaf2>h3's rate fills
// leaf2's buffer for the spine's frames; the pauses reach h1's own port (in the VM lane: 3 pauses
// of 5-7 ms each there, behind 15-30 on leaf1>spine1 and 21-44 on spine1>leaf2), each longer than
// its watchdog allows (2 ms), which then drops the class there: silently, as a switch's watchdog
// discards its queue. An echo in the class, sent meanwhile, is lost, not refused.
TEST_F(WireLossTest, AWatchdogOnAHostsPortDropsTheClassWithoutTellingTheSender) {
  static SystemProbe probe("/run/fabemu", /*fresh=*/false);
  static Capabilities caps(probe);
  if (!caps.fq().yes())
    GTEST_SKIP() << "no fq on this kernel: PFC needs it (the VM lane runs this)";
  up("ww");
  for (Argv a : {Argv{"set", "leaf1:spine1", "--pfc", "60K,20K"},
                 Argv{"set", "spine1:leaf2", "--pfc", "60K,20K"},
                 Argv{"set", "h1:leaf1", "--pfc", "60K,20K,2ms"},
                 Argv{"set", "leaf2>h3", "--rate", "2500kbit"}}) {
    Outcome o = link(a);
    ASSERT_EQ(o.status, 0) << o;
  }
  // UDP, which no window slows: the buffers fill whatever the CPU (the VM lane's is emulated).
  // How long the pauses at h1's port last depends on how the emulated CPU paces the flood (with
  // a 10 ms watchdog the VM lane once saw no drop in one run of three; with 10 Mbit/s offered
  // the pauses sometimes reached no further back than leaf1>spine1, once in three runs): 30
  // Mbit/s, 12 times the bottleneck, and another flood when one fired none, with the pauses so
  // far printed.
  constexpr int kCount = 100;
  Ping ping;
  uint64_t watchdog = 0;
  for (int attempt = 1; attempt <= 3 && watchdog == 0; ++attempt) {
    Process server = spawn({kFabemu, "exec", lab_->name() + ":h3", "--", *find_tool("iperf3"), "-s",
                            "-1", "-p", "5312"});
    std::this_thread::sleep_for(500ms);
    Process flood = spawn({kFabemu, "exec", lab_->name() + ":h1", "--", *find_tool("iperf3"), "-c",
                           "h3", "-p", "5312", "-u", "-b", "30M", "-t", "6", "--dscp", "26"});
    std::this_thread::sleep_for(1500ms);
    Outcome p = lab_->exec("h1", {"/usr/bin/ping", "-q", "-c", std::to_string(kCount), "-i", "0.02",
                                  "-W", "2", "-Q", "104", "h3"});  // TOS 104: DSCP 26
    flood.stop(0ms);
    server.stop(0ms);
    ping = parse_ping(p);
    watchdog = drops(kHostPort);
    std::printf("flood %d: watchdog drops on %s: %llu; echoes in the class lost %d of %d; %s\n",
                attempt, kHostPort, static_cast<unsigned long long>(watchdog),
                ping.transmitted - ping.received, kCount, pauses().c_str());
  }
  ASSERT_GT(watchdog, 0u) << "the watchdog never fired on h1's port";
  expect_silent(ping, kCount, kHostPort);
}

}  // namespace
}  // namespace fabemu::itest
