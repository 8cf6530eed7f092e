// Soft-RoCE labs driven through the CLI: `up` decides from the kernel probe (and refuses `on`
// where rxe cannot work, touching nothing), every host gets an rxe device named after it on
// its NIC, perftest and ibv_rc_pingpong cross the fabric, `status` shows the counters move, and
// `down` removes every device, also after `up` was killed half-way.
#include <fcntl.h>
#include <signal.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apply/rdma.h"
#include "doctor/rxe_support.h"
#include "lab_fixture.h"

namespace fabemu::itest {
namespace {

// 2 leaves x 2 hosts, 2 spines: h1, h2 on leaf1; h3, h4 on leaf2.
std::string leaf_spine_4(const std::string& rdma) {
  return "name: rdma\n"
         "topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}\n"
         "rdma: {enabled: " +
         rdma + "}\n";
}

const std::string kDefaultScenario = kSourceDir + "/scenarios/default.yaml";

// What `up` itself sees: the same verdict, from the same per-boot cache.
const doctor::RxeSupport& rxe_here() {
  static const doctor::RxeSupport s = doctor::rxe_support("/run/fabemu/rxe-probe");
  return s;
}

std::string device_prefix(const std::string& lab) {
  return "fabemu-" + lab + "-";
}

std::vector<std::string> lab_devices(const std::string& lab) {
  return rdma_devices_named(device_prefix(lab));
}

// "10.64.0.5" -> the RoCEv2 GID sysfs shows for it: "0000:...:ffff:0a40:0005".
std::string mapped_gid(const std::string& ipv4) {
  unsigned a, b, c, d;
  if (std::sscanf(ipv4.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d) != 4) return "?";
  char buf[64];
  std::snprintf(buf, sizeof buf, "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a, b, c, d);
  return buf;
}

// A counter of one device in `status --json` ("rdma": {"devices": [...]}); -1 when absent.
long long status_counter(const std::string& json, const std::string& device,
                         const std::string& counter) {
  std::smatch m;
  const std::regex re("\"device\":\"" + device + "\"[^\\]]*?\"" + counter + "\":(\\d+)");
  return std::regex_search(json, m, re) ? std::stoll(m[1].str()) : -1;
}

// GTEST_SKIP returns from the test only when written in it: hence macros.
#define SKIP_WITHOUT_RXE() \
  if (!rxe_here().usable)  \
  GTEST_SKIP() << "no rxe between namespaces on this kernel: " << rxe_here().reason
#define SKIP_WITH_RXE()                                                            \
  if (rxe_here().usable)                                                           \
  GTEST_SKIP() << "this kernel runs rxe between namespaces (" << rxe_here().reason \
               << "): nothing to refuse"

using RdmaTest = LabTest;

// ---------------------------------------------------------------------------------------------
// Kernels without rxe between namespaces (this machine: no RDMA at all; Debian 12's 6.1).

TEST_F(RdmaTest, OnIsRefusedWithTheProbedReasonAndNothingIsMade) {
  SKIP_WITH_RXE();
  const std::string name = lab_name("ron");
  const Snapshot before = Snapshot::take(name);
  TempScenario scenario(leaf_spine_4("on"));
  LabGuard lab(name);
  Outcome o = lab.up(scenario.path());
  EXPECT_EQ(o.status, 5) << o;  // unsupported here
  EXPECT_NE(o.err.find("rdma.enabled: on"), std::string::npos) << o;
  EXPECT_NE(o.err.find(rxe_here().reason), std::string::npos) << o;
  EXPECT_EQ(Snapshot::take(name), before);
}

TEST_F(RdmaTest, AutoComesUpWithoutRxeAndSaysWhy) {
  SKIP_WITH_RXE();
  TempScenario scenario(leaf_spine_4("auto"));
  LabGuard lab(lab_name("rauto"));
  Outcome o = lab.up_json(scenario.path());
  ASSERT_EQ(o.status, 0) << o;
  const nlohmann::json up = json_of(o);
  EXPECT_EQ(up["rxe_devices"], 0) << o;
  // up says why among its notes: the probe's reason.
  bool said = false;
  for (const nlohmann::json& n : up["notes"])
    said |= n.get<std::string>().find(rxe_here().reason) != std::string::npos;
  EXPECT_TRUE(said) << o;
  EXPECT_TRUE(lab_devices(lab.name()).empty());

  Outcome json = fabemu({"status", lab.name(), "--json"});
  EXPECT_EQ(json.status, 0) << json;
  const nlohmann::json rdma = json_of(json)["rdma"];
  EXPECT_EQ(rdma["mode"], "off") << json;
  EXPECT_EQ(rdma["reason"], rxe_here().reason) << json;

  // Ranks are told nothing about RDMA; perftest needs rxe and says so.
  Outcome env = lab.exec("h1", {"/usr/bin/env"});
  EXPECT_EQ(env.out.find("FABEMU_RDMA_DEVICE"), std::string::npos) << env;
  EXPECT_NE(env.out.find("UCX_NET_DEVICES=eth0"), std::string::npos) << env;
  Outcome perf = fabemu({"perf", lab.name(), "h1", "h3", "--tool", "ib_write_bw"});
  EXPECT_EQ(perf.status, 2) << perf;
  EXPECT_NE(perf.err.find("needs soft-RoCE"), std::string::npos) << perf;
}

// ---------------------------------------------------------------------------------------------
// Kernels >= 7.1 (the VM lane).

TEST_F(RdmaTest, EveryHostGetsItsDeviceAndPerftestCrossesTheFabric) {
  SKIP_WITHOUT_RXE();
  if (!find_tool("ib_write_bw")) GTEST_SKIP() << "ib_write_bw is not installed (perftest)";
  const std::string name = lab_name("rperf");
  const Snapshot before = Snapshot::take(name);
  TempScenario scenario(leaf_spine_4("on"));
  {
    LabGuard lab(name);
    Outcome up = lab.up_json(scenario.path());
    ASSERT_EQ(up.status, 0) << up;
    EXPECT_EQ(json_of(up)["rxe_devices"], 4) << up;

    // One device per host, named after it, on its NIC, with the NIC's address as GID 1.
    const std::vector<std::string> expected = {name + "-h1", name + "-h2", name + "-h3",
                                               name + "-h4"};
    std::vector<std::string> devices = lab_devices(name);
    for (auto& d : devices) d = d.substr(std::string("fabemu-").size());
    EXPECT_EQ(devices, expected);
    Outcome json = fabemu({"status", name, "--json"});
    ASSERT_EQ(json.status, 0) << json;
    for (const auto& [host, address] : host_addresses(json.out)) {
      const RdmaDeviceState s = read_rdma_device(device_prefix(name) + host);
      ASSERT_TRUE(s.present) << host;
      EXPECT_EQ(s.netdev, "eth0") << host;
      EXPECT_EQ(s.state, "ACTIVE") << host;
      EXPECT_EQ(s.gid1, mapped_gid(address)) << host << " " << address;
      EXPECT_EQ(s.gid1_type, "RoCE v2") << host;
    }
    Outcome env = lab.exec("h3", {"/usr/bin/env"});
    EXPECT_NE(env.out.find("FABEMU_RDMA_DEVICE=" + device_prefix(name) + "h3\n"), std::string::npos)
        << env;
    EXPECT_NE(env.out.find("UCX_NET_DEVICES=" + device_prefix(name) + "h3:1\n"), std::string::npos)
        << env;

    // h1 and h3 hang off different leaves: RC over RoCEv2 through a spine. 200 writes of 64 KiB
    // (the default is 5000): soft-RoCE under an emulated CPU on a busy machine moves ~1-10 MB/s.
    // What crossed the fabric is read from the devices' own counters, as the RDMA incast step
    // reads them: perftest's bandwidth needs its estimate of the CPU's clock, which an emulated
    // CPU can spoil ("Correlation coefficient r^2: 0.71 < 0.9", then 0.00 MB/sec for writes
    // that all arrived).
    auto counter = [&](const std::string& host, const char* what) {
      Outcome st = fabemu({"status", name, "--json"});
      EXPECT_EQ(st.status, 0) << st;
      return status_counter(st.out, device_prefix(name) + host, what);
    };
    // `perf LAB SERVER CLIENT`: the client, h3, writes into the server, h1.
    const long long sent0 = counter("h3", "sent_pkts"), rcvd0 = counter("h1", "rcvd_pkts");
    Outcome perf = fabemu(
        {"perf", name, "h1", "h3", "--tool", "ib_write_bw", "--timeout", "150", "--", "-n", "200"},
        180s);
    ASSERT_EQ(perf.status, 0) << perf;
    std::smatch m;
    if (std::regex_search(perf.out, m,
                          std::regex(R"(\n\s*65536\s+\d+\s+([0-9.]+)\s+([0-9.]+)\s+[0-9.]+)")))
      std::printf(
          "ib_write_bw h3 -> h1 over rxe: %s MB/sec average (%s peak), by perftest's clock\n",
          m[2].str().c_str(), m[1].str().c_str());
    // 200 x 64 KiB in frames of at most 4096 bytes of payload: at least 3200 frames of data
    // from h3 into h1 (and an ACK per write back).
    const long long sent = counter("h3", "sent_pkts") - sent0;
    const long long rcvd = counter("h1", "rcvd_pkts") - rcvd0;
    std::printf("rxe counters: h3 sent %lld packets, h1 received %lld\n", sent, rcvd);
    EXPECT_GE(sent, 3200) << perf;
    EXPECT_GE(rcvd, 3200) << perf;
    for (const char* host : {"h1", "h3"}) {
      EXPECT_GT(counter(host, "sent_pkts"), 0) << host;
      EXPECT_GT(counter(host, "rcvd_pkts"), 0) << host;
    }
    // status: soft-RoCE on the 4 hosts, each device there.
    const nlohmann::json rdma = json_of(fabemu({"status", name, "--json"}))["rdma"];
    EXPECT_EQ(rdma["mode"], "rxe") << rdma;
    ASSERT_EQ(rdma["devices"].size(), 4u) << rdma;
    for (const nlohmann::json& d : rdma["devices"]) EXPECT_TRUE(d["present"]) << d;

    Outcome down = lab.down();
    EXPECT_EQ(down.status, 0) << down;
    EXPECT_EQ(lab_devices(name), std::vector<std::string>{});
  }
  EXPECT_EQ(Snapshot::take(name), before);
}

TEST_F(RdmaTest, AutoLabsGetRxeAndRcTrafficCrossesTheFabricOnTheirDevices) {
  SKIP_WITHOUT_RXE();
  const auto pingpong = find_tool("ibv_rc_pingpong");
  if (!pingpong) GTEST_SKIP() << "ibv_rc_pingpong not installed (ibverbs-utils)";
  LabGuard lab(lab_name("rpp"));
  Outcome up = lab.up_json(kDefaultScenario);  // rdma: {enabled: auto}
  ASSERT_EQ(up.status, 0) << up;
  EXPECT_EQ(json_of(up)["rxe_devices"], 8) << up;
  const std::string h1 = device_prefix(lab.name()) + "h1", h8 = device_prefix(lab.name()) + "h8";
  Process server = spawn(
      fabemu_argv({"exec", lab.name() + ":h8", "--", *pingpong, "-d", h8, "-g", "1", "-n", "10"}));
  Outcome client;
  for (int attempt = 0; attempt < 30; ++attempt) {  // until the server listens
    std::this_thread::sleep_for(100ms);
    client = lab.exec("h1", {*pingpong, "-d", h1, "-g", "1", "-n", "10", "h8"});
    if (client.status == 0) break;
  }
  EXPECT_EQ(client.status, 0) << client;
  EXPECT_EQ(wait_for(server, 10s), std::optional<int>(0))
      << "the server side did not finish cleanly";
}

TEST_F(RdmaTest, DownAfterUpWasKilledRemovesTheDevices) {
  SKIP_WITHOUT_RXE();
  const std::string name = lab_name("rcrash");
  const Snapshot before = Snapshot::take(name);
  TempScenario scenario(leaf_spine_4("on"));
  LabGuard lab(name);
  {
    Process up = spawn(fabemu_argv({"up", scenario.path(), "--lab", name, "-q"}));
    // Killed as soon as the first device exists: the others are half-made or not yet there.
    const auto deadline = Clock::now() + 120s;
    while (lab_devices(name).empty() && Clock::now() < deadline && !up.poll())
      std::this_thread::sleep_for(1ms);
    EXPECT_FALSE(lab_devices(name).empty()) << "`up` never made an rxe device";
  }  // SIGKILL
  Outcome down = fabemu({"down", name});
  EXPECT_EQ(down.status, 0) << down;
  EXPECT_EQ(lab_devices(name), std::vector<std::string>{});
  EXPECT_EQ(Snapshot::take(name), before);
}

// A capture of RDMA writes over rxe reads in tshark as RoCEv2: InfiniBand BTH opcodes in the
// frames h3 sends (RDMA WRITE First/Middle/Last/Only) and its peer's ACKs coming back.
TEST_F(RdmaTest, AnRdmaWritesFramesDissectInTsharkWithTheirBthOpcodes) {
  SKIP_WITHOUT_RXE();
  for (const char* tool : {"ib_write_bw", "tshark"})
    if (!find_tool(tool)) GTEST_SKIP() << tool << " is not installed (perftest, tshark)";
  TempScenario scenario(leaf_spine_4("on"));
  LabGuard lab(lab_name("rcap"));
  ASSERT_EQ(lab.up(scenario.path()).status, 0);
  TempDir dir("fabemu-rcap");
  const std::string file = dir.path() + "/h3.pcapng";
  const int log = ::open((dir.path() + "/capture.log").c_str(), O_WRONLY | O_CREAT, 0644);
  Process capture =
      spawn(fabemu_argv({"capture", lab.name(), "h3:eth0", "--filter", "udp port 4791", "-c", "300",
                         "--snaplen", "128", "-w", file}),
            log, log);
  ::close(log);
  std::this_thread::sleep_for(1s);  // the handles are open
  Outcome perf = fabemu({"perf", lab.name(), "h1", "h3", "--tool", "ib_write_bw", "--timeout",
                         "150", "--", "-n", "50"},
                        180s);
  ASSERT_EQ(perf.status, 0) << perf;
  EXPECT_EQ(wait_for(capture, 30s).value_or(-1), 0) << read_text(dir.path() + "/capture.log");
  const Outcome read = run({"tshark", "-r", file, "-T", "fields", "-e", "infiniband.bth.opcode",
                            "-e", "frame.packet_flags_direction"},
                           60s);
  ASSERT_EQ(read.status, 0) << read;
  std::map<std::string, int> sent, received;  // opcode -> frames
  std::istringstream lines(read.out);
  for (std::string line; std::getline(lines, line);) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos || tab == 0) continue;
    (line.substr(tab + 1) == "0x00000002" ? sent : received)[line.substr(0, tab)]++;
  }
  std::string seen;
  for (const auto& [op, n] : sent) seen += " out " + op + " x" + std::to_string(n);
  for (const auto& [op, n] : received) seen += " in " + op + " x" + std::to_string(n);
  std::printf("BTH opcodes on h3's port:%s\n", seen.c_str());
  // RC RDMA WRITE First 6, Middle 7, Last 8, Only 10; Acknowledge 17.
  EXPECT_GT(sent["6"] + sent["7"] + sent["8"] + sent["10"], 0) << seen;
  EXPECT_GT(received["17"], 0) << seen;
}

// DCQCN's CNPs on the wire: during an RDMA incast the receiver's port sends them back, and
// tshark reads them as BTH opcode 0x81 (129) leaving h1.
TEST_F(RdmaTest, DcqcnCnpsLeaveTheReceiversPortAsBthOpcode0x81) {
  SKIP_WITHOUT_RXE();
  if (!find_tool("tshark")) GTEST_SKIP() << "tshark is not installed";
  TempScenario scenario(
      "name: cnp\ntime_scale: 10000\n"
      "topology: {kind: leaf-spine, leaves: 3, spines: 1, hosts_per_leaf: 4}\n"
      "fabric: {mtu: 9000, lossless: {udp_port: 4791, dscp: [26]}}\n"
      "links:\n  default: {rate: 100gbit, delay: 1us, queue: 2M, pfc: {xoff: 400K, xon: 300K}, "
      "ecn: {kmin: 40K, kmax: 160K, pmax: 20%}}\n"
      "rdma: {enabled: on, cc: dcqcn}\n"
      "workload:\n  - incast: {senders: [h2, h5], receiver: h1, transport: rdma, duration: "
      "400us}\n");
  TempDir dir("fabemu-cnp");
  const std::string lab = lab_name("cnp");
  LabGuard guard(lab);
  const int log = ::open((dir.path() + "/run.log").c_str(), O_WRONLY | O_CREAT, 0644);
  Process runner =
      spawn(fabemu_argv({"run", scenario.path(), "--lab", lab, "--report", dir.path() + "/report"}),
            log, log);
  const auto deadline = Clock::now() + 300s;
  while (!std::filesystem::exists(run_dir(lab) + "/step") && Clock::now() < deadline &&
         !wait_for(runner, 100ms))
    ;
  ASSERT_TRUE(std::filesystem::exists(run_dir(lab) + "/step"))
      << read_text(dir.path() + "/run.log");
  // The BTH's first byte, the opcode, follows UDP's 8-byte header.
  const std::string file = dir.path() + "/h1.pcapng";
  const Outcome cap =
      fabemu({"capture", lab, "h1>leaf1", "--filter", "udp dst port 4791 and udp[8] = 0x81", "-c",
              "3", "--seconds", "200", "--snaplen", "128", "-w", file},
             240s);
  EXPECT_EQ(cap.status, 0) << cap;
  EXPECT_EQ(wait_for(runner, 600s).value_or(-1), 0) << read_text(dir.path() + "/run.log");
  ::close(log);
  const Outcome read = run({"tshark", "-r", file, "-T", "fields", "-e", "infiniband.bth.opcode",
                            "-e", "infiniband.bth.destqp"},
                           60s);
  ASSERT_EQ(read.status, 0) << read;
  std::printf("CNPs h1 sent, as tshark reads them (opcode, destination QP):\n%s", read.out.c_str());
  std::istringstream lines(read.out);
  int cnps = 0;
  for (std::string line; std::getline(lines, line);) cnps += line.rfind("129\t", 0) == 0;
  EXPECT_GE(cnps, 1) << read.out << cap;
}

}  // namespace
}  // namespace fabemu::itest
