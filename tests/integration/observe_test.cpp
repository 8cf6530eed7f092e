// A lab seen with the tools network engineers already use: a capture of a dilated 100G link read
// by tshark in the real fabric's time, a real Prometheus server scraping `fabemu metrics`
// during a `fabemu run`, `run --junit` checked by xmllint against the project's schema for a
// passing and a failing run, and `fabemu top` drawn in tmux.
#include <fcntl.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "lab_fixture.h"

namespace fabemu::itest {
namespace {

// Two hosts under one leaf, every link 100 Gbit/s, dilated x1000: the ports run at 100 Mbit/s.
std::string fabric_100g(const std::string& extra = "") {
  return "name: obs\ntopology: {kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 2}\n"
         "links:\n  host-leaf: {rate: 100gbit}\n  leaf-spine: {rate: 100gbit}\n"
         "rdma: {enabled: off}\ntime_scale: 1000\n" +
         extra;
}

// One 1514-byte frame at 100 Gbit/s: the wire time the link model charges for it.
constexpr double kSerializationNs = 1514 * 8 / 100.0;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, '\t');) out.push_back(f);
  return out;
}

class ObserveTest : public LabTest {
 protected:
  // An iperf3 server on h2 for one test, and a client on h1 for `seconds` (wall), in the
  // background: the lab's hosts are busy while the test looks.
  Process iperf(const LabGuard& lab, int seconds) {
    EXPECT_EQ(lab.exec("h2", {"iperf3", "-s", "-D", "-1"}).status, 0);
    std::this_thread::sleep_for(300ms);
    return spawn(fabemu_argv(
        {"exec", lab.name() + ":h1", "--", "iperf3", "-c", "h2", "-t", std::to_string(seconds)}));
  }
  TempDir tmp_{"fabemu-observe"};
  const std::string dir_ = tmp_.path();
};

// tshark reads the capture: an interface per direction named after the link, each frame with
// its direction, and the gaps between back-to-back full frames are their serialization time at
// 100 Gbit/s (in wall-clock stamps they would be 1000 times longer).
TEST_F(ObserveTest, ACaptureOfADilated100GLinkReadsInTsharkInTheRealFabricsTime) {
  if (!find_tool("tshark")) GTEST_SKIP() << "tshark is not installed";
  if (!find_tool("iperf3")) GTEST_SKIP() << "iperf3 is not installed";
  TempScenario scenario(fabric_100g());
  LabGuard lab(lab_name("cap"));
  ASSERT_EQ(lab.up(scenario.path()).status, 0);
  Process client = iperf(lab, 4);
  std::this_thread::sleep_for(1s);
  const std::string file = dir_ + "/h1-leaf1.pcapng";
  const Outcome cap = fabemu({"capture", lab.name(), "h1:leaf1", "-c", "2000", "-w", file}, 30s);
  ASSERT_EQ(cap.status, 0) << cap;
  EXPECT_NE(cap.err.find("2000 frames captured"), std::string::npos) << cap;
  const Outcome read =
      run({"tshark", "-r", file, "-T", "fields", "-e", "frame.interface_name", "-e",
           "frame.interface_description", "-e", "frame.packet_flags_direction", "-e", "frame.len",
           "-e", "frame.time_relative", "-e", "frame.time_epoch"},
          60s);
  ASSERT_EQ(read.status, 0) << read;
  const auto frames = lines_of(read.out);
  ASSERT_EQ(frames.size(), 2000u) << read;
  // Times of h1's full frames, ns since the first frame (an epoch time in a double keeps only
  // ~240 ns).
  std::vector<double> sent;
  double first_epoch = 0;
  for (const std::string& line : frames) {
    const auto f = fields_of(line);
    ASSERT_EQ(f.size(), 6u) << line;
    if (!first_epoch) first_epoch = std::stod(f[5]);
    EXPECT_EQ(f[0], "h1:leaf1") << line;
    const bool out = f[2] == "0x00000002";
    EXPECT_EQ(f[1].rfind(out ? "h1>leaf1" : "leaf1>h1", 0), 0u) << line;
    if (out && f[3] == "1514") sent.push_back(std::stod(f[4]) * 1e9);
  }
  ASSERT_GT(sent.size(), 500u) << "h1 sent too few full frames: " << read.out.substr(0, 2000);
  std::vector<double> gaps;
  for (size_t i = 1; i < sent.size(); ++i) gaps.push_back(sent[i] - sent[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  const double gap = gaps[gaps.size() / 2];
  RecordProperty("median_gap_ns", std::to_string(gap));
  std::printf("median gap between h1's full frames: %.1f ns (serialization at 100G: %.1f ns)\n",
              gap, kSerializationNs);
  EXPECT_GT(gap, kSerializationNs / 2);
  EXPECT_LT(gap, kSerializationNs * 4) << "not in the real fabric's time";
  // The lab's epoch: the frames are dated the day they were captured, not in 1970.
  EXPECT_NEAR(first_epoch, double(std::time(nullptr)), 3600);
  wait_for(client, 30s);
}

// What a user types wrong: exit 2 and the reason.
TEST_F(ObserveTest, ABadCaptureTargetOrFilterIsRefused) {
  TempScenario scenario(fabric_100g());
  LabGuard lab(lab_name("capbad"));
  ASSERT_EQ(lab.up(scenario.path()).status, 0);
  Outcome o = fabemu({"capture", lab.name(), "h1:nosuch", "-c", "1"});
  EXPECT_EQ(o.status, 2) << o;
  EXPECT_NE(o.err.find("capture target 'h1:nosuch'"), std::string::npos) << o;
  const std::string file = dir_ + "/never.pcapng";
  o = fabemu({"capture", lab.name(), "h1:leaf1", "--filter", "tcp port (", "-c", "1", "-w", file});
  EXPECT_EQ(o.status, 2) << o;
  EXPECT_NE(o.err.find("can't parse filter expression"), std::string::npos) << o;
  EXPECT_FALSE(std::filesystem::exists(file)) << "a refused capture left its file";
  o = fabemu({"capture", "nosuchlab", "h1:leaf1", "-c", "1"});
  EXPECT_EQ(o.status, 3) << o;
}

// promtool's query: the first sample's value, or nullopt.
std::optional<double> prom_value(const std::string& server, const std::string& expr, double at_s) {
  const Outcome q = run(
      {"promtool", "query", "instant", "-o", "json", "--time", std::to_string(at_s), server, expr},
      30s);
  if (q.status != 0) return std::nullopt;
  auto j = nlohmann::json::parse(q.out, nullptr, false);
  if (!j.is_array() || j.empty()) return std::nullopt;
  return std::stod(j[0]["value"][1].get<std::string>());
}

// `status --json`'s bytes of one direction and when they were read.
struct StatusRead {
  uint64_t bytes = 0;
  int64_t at_ns = 0;
  double scale = 1;
};
StatusRead status_bytes(const std::string& lab, const std::string& link, const char* dir) {
  const Outcome o = fabemu({"status", lab, "--json"});
  const auto j = nlohmann::json::parse(o.out, nullptr, false);
  StatusRead r;
  if (!j.is_object()) return r;
  r.at_ns = j.value("read_at_ns", int64_t{0});
  r.scale = j.value("time_scale", 1.0);
  for (const auto& l : j["links"])
    if (l.value("name", "") == link) r.bytes = l[dir]["counters"].value("bytes", uint64_t{0});
  return r;
}

// A Prometheus server scrapes the exporter every second while `fabemu run` plays an iperf3
// step; its rate() of h1's bytes, times the dilation, is the real fabric's throughput that
// `status` counts over the same window.
TEST_F(ObserveTest, PrometheusScrapesTheExporterDuringARun) {
  for (const char* tool : {"prometheus", "promtool", "iperf3"})
    if (!find_tool(tool)) GTEST_SKIP() << tool << " is not installed (prometheus, iperf3)";
  const std::string lab = lab_name("prom");
  TempScenario scenario(fabric_100g(
      "workload:\n  - exec:\n      hosts: [h1, h2]\n      timeout: 120s\n      command: [sh, "
      "-c, 'if [ $(hostname) = h2 ]; then iperf3 -s -1; else sleep 1; iperf3 -c h2 -t 25; "
      "fi']\n"));
  LabGuard guard(lab);
  const int fd = ::open((dir_ + "/run.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Process runner = spawn(
      fabemu_argv({"run", scenario.path(), "--lab", lab, "--report", dir_ + "/report"}), fd, fd);
  ::close(fd);
  // The workload has begun once `run` says which step plays.
  const auto deadline = Clock::now() + 60s;
  while (!std::filesystem::exists(run_dir(lab) + "/step") && Clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(std::filesystem::exists(run_dir(lab) + "/step")) << read_text(dir_ + "/run.log");
  const int port = 20000 + ::getpid() % 20000;
  const std::string exporter_at = "127.0.0.1:" + std::to_string(port);
  const std::string server = "http://127.0.0.1:" + std::to_string(port + 1);
  Process exporter = spawn(fabemu_argv({"metrics", lab, "--listen", exporter_at}));
  std::ofstream(dir_ + "/prometheus.yml")
      << "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
         "scrape_configs:\n  - job_name: fabemu\n    static_configs:\n      - targets: ['"
      << exporter_at << "']\n";
  Process prometheus = spawn({"prometheus", "--config.file=" + dir_ + "/prometheus.yml",
                              "--storage.tsdb.path=" + dir_ + "/tsdb",
                              "--web.listen-address=127.0.0.1:" + std::to_string(port + 1)});
  const std::string series =
      "fabemu_link_tx_bytes_total{lab=\"" + lab + "\",direction=\"h1>leaf1\"}";
  // Three scrapes in before the window starts.
  std::optional<double> seen;
  for (auto until = Clock::now() + 30s; Clock::now() < until; std::this_thread::sleep_for(1s))
    if ((seen = prom_value(server, "count_over_time(" + series + "[1m])",
                           double(std::time(nullptr)))) &&
        *seen >= 3)
      break;
  ASSERT_TRUE(seen && *seen >= 3) << "Prometheus did not scrape the exporter";
  const StatusRead a = status_bytes(lab, "h1:leaf1", "a_to_b");
  std::this_thread::sleep_for(10s);
  const StatusRead b = status_bytes(lab, "h1:leaf1", "a_to_b");
  ASSERT_GT(b.at_ns, a.at_ns);
  std::this_thread::sleep_for(1500ms);  // the scrape after the window is in
  const double window_s = double(b.at_ns - a.at_ns) / 1e9;
  const double status_bps = double(b.bytes - a.bytes) * 8 / (window_s / b.scale);
  const auto prom_Bps =
      prom_value(server,
                 "rate(" + series + "[" + std::to_string(int64_t(window_s * 1000)) +
                     "ms]) * on(lab) group_left fabemu_lab_time_dilation",
                 double(b.at_ns) / 1e9);
  ASSERT_TRUE(prom_Bps) << "no rate() from Prometheus";
  const double ratio = *prom_Bps * 8 / status_bps;
  std::printf(
      "h1>leaf1 over %.2f s of wall clock: status %.2f Gbit/s, Prometheus rate() %.2f "
      "Gbit/s (ratio %.3f)\n",
      window_s, status_bps / 1e9, *prom_Bps * 8 / 1e9, ratio);
  RecordProperty("prometheus_over_status", std::to_string(ratio));
  // Units, not timing: the real fabric's (a wall-clock rate would be 1000 times lower).
  EXPECT_GT(status_bps, 10e9);
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 2);
  const auto dilation = prom_value(server, "fabemu_lab_time_dilation{lab=\"" + lab + "\"}",
                                   double(std::time(nullptr)));
  EXPECT_EQ(dilation.value_or(0), 1000);
  const auto status = wait_for(runner, 120s);
  EXPECT_EQ(status.value_or(-1), 0) << read_text(dir_ + "/run.log");
  // The lab is gone; the exporter stops at SIGINT.
  ::kill(exporter.pid(), SIGINT);
  EXPECT_EQ(wait_for(exporter, 10s).value_or(-1), 0);
}

// One run that passes and one whose expectation fails: both reports are valid JUnit, with the
// failure and its reason where a CI system looks for them.
TEST_F(ObserveTest, JunitReportsOfAPassingAndAFailingRunAreValid) {
  if (!find_tool("xmllint")) GTEST_SKIP() << "xmllint is not installed (libxml2-utils)";
  const std::string xsd = kSourceDir + "/docs/schema/junit.xsd";
  const std::string base =
      "topology: {kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 2}\n"
      "links: {default: {rate: 50mbit}}\nrdma: {enabled: off}\n"
      "workload:\n  - collective: allreduce\n    sizes: [64K]\n    iterations: 2\n"
      "  - exec: {hosts: [h1], command: [ping, -c, '1', h2]}\n";
  for (const bool pass : {true, false}) {
    TempScenario scenario("name: junit\n" + base + "expect: {completes: true, busbw_min: " +
                          (pass ? "1kbit" : "1tbit") + "}\n");
    LabGuard lab(lab_name(pass ? "jpass" : "jfail"));
    const std::string xml = dir_ + (pass ? "/pass.xml" : "/fail.xml");
    const Outcome o = fabemu({"run", scenario.path(), "--lab", lab.name(), "--junit", xml,
                              "--report", dir_ + "/r" + std::to_string(pass)},
                             120s);
    EXPECT_EQ(o.status, pass ? 0 : 1) << o;
    const Outcome lint = run({"xmllint", "--noout", "--schema", xsd, xml});
    EXPECT_EQ(lint.status, 0) << lint << read_text(xml);
    const std::string text = read_text(xml);
    EXPECT_NE(text.find("<testsuite name=\"fabemu run " + lab.name() +
                        "\" tests=\"5\" failures=\"" + (pass ? "0" : "1") + "\""),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("name=\"workload[0] allreduce"), std::string::npos) << text;
    EXPECT_NE(text.find("busbw"), std::string::npos) << text;  // the step's figures
    EXPECT_EQ(text.find("<failure") != std::string::npos, !pass) << text;
  }
  // A directory that is not there: refused before anything is built.
  TempScenario scenario("name: junit\n" + base);
  const Outcome o = fabemu({"run", scenario.path(), "--junit", "/nonexistent/dir/x.xml"});
  EXPECT_EQ(o.status, 2) << o;
  EXPECT_FALSE(std::filesystem::exists(run_dir("junit")));
}

// `top` in a terminal (tmux): the header, the busiest direction under traffic, and q quits.
TEST_F(ObserveTest, TopDrawsTheBusiestDirectionsAndQuitsOnQ) {
  for (const char* tool : {"tmux", "iperf3"})
    if (!find_tool(tool)) GTEST_SKIP() << tool << " is not installed";
  TempScenario scenario(fabric_100g());
  LabGuard lab(lab_name("top"));
  ASSERT_EQ(lab.up(scenario.path()).status, 0);
  Process client = iperf(lab, 6);
  const std::string session = "fabemu-" + lab.name();
  ASSERT_EQ(run({"tmux", "new-session", "-d", "-s", session, "-x", "150", "-y", "30", kFabemu,
                 "top", lab.name()})
                .status,
            0);
  std::this_thread::sleep_for(3500ms);
  const Outcome pane = run({"tmux", "capture-pane", "-p", "-t", session});
  EXPECT_NE(pane.out.find("fabemu top: lab " + lab.name()), std::string::npos) << pane.out;
  EXPECT_NE(pane.out.find("DIRECTION"), std::string::npos) << pane.out;
  // The busiest direction first: h1's iperf3 into the leaf, in Gbit/s of the real fabric.
  const auto rows = lines_of(pane.out);
  auto header = std::find_if(rows.begin(), rows.end(),
                             [](const std::string& l) { return l.rfind("DIRECTION", 0) == 0; });
  ASSERT_NE(header, rows.end()) << pane.out;
  ASSERT_NE(header + 1, rows.end()) << pane.out;
  EXPECT_TRUE((header + 1)->rfind("h1>leaf1", 0) == 0 || (header + 1)->rfind("leaf1>h2", 0) == 0)
      << pane.out;
  EXPECT_NE((header + 1)->find("Gbit/s"), std::string::npos) << pane.out;
  run({"tmux", "send-keys", "-t", session, "q"});
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    std::this_thread::sleep_for(100ms);
    gone = run({"tmux", "has-session", "-t", session}).status != 0;
  }
  EXPECT_TRUE(gone) << "top did not quit on q";
  if (!gone) run({"tmux", "kill-session", "-t", session});
  // Not a terminal: frames one after another.
  const Outcome batch = fabemu({"top", lab.name(), "--batch", "-n", "2", "--interval", "0.5"});
  EXPECT_EQ(batch.status, 0) << batch;
  size_t frames = 0;
  for (size_t at = 0; (at = batch.out.find("fabemu top: lab", at)) != std::string::npos; ++at)
    ++frames;
  EXPECT_EQ(frames, 2u) << batch;
  wait_for(client, 30s);
}

}  // namespace
}  // namespace fabemu::itest
