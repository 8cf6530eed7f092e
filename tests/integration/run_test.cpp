// `fabemu run` as users run it: the report it writes rendered by headless Chromium, a spine
// link taken down during an allreduce (the collective completes on the other paths, and the
// report shows the fault), a flapping link that never hangs a step, and `expect:` failing a run.
#include <regex>
#include <string>

#include "lab_fixture.h"

namespace fabemu::itest {
namespace {

const std::string kDefaultScenario = kSourceDir + "/scenarios/default.yaml";

class RunTest : public LabTest {
 protected:
  Outcome run(const std::string& scenario, const std::string& lab,
              std::chrono::milliseconds timeout = 300s) {
    return fabemu(
        {"run", scenario, "--lab", lab, "--report", dir_, "--accept-degraded", "-q", "--json"},
        timeout);
  }
  TempDir tmp_{"fabemu-report"};
  const std::string dir_ = tmp_.path();
};

// 8 hosts on 4 leaves and 2 spines at 25 Mbit/s: one allreduce long enough for faults to land
// in the middle of it.
std::string faulty_scenario(const std::string& faults, const std::string& extra = "") {
  return "name: fault\nseed: 3\n"
         "topology: {kind: leaf-spine, leaves: 4, spines: 2, hosts_per_leaf: 2}\n"
         "links: {default: {rate: 25mbit}}\nrdma: {enabled: off}\n"
         "workload:\n  - {collective: allreduce, library: gloo, transport: tcp, sizes: [4M], "
         "iterations: 3, timeout: 120s}\n"
         "faults:\n" +
         faults + extra;
}

// The report of the default scenario, as a user opens it: Chromium renders the page (a
// non-empty screenshot) and its DOM holds the topology, a link per fabric link and the plots.
TEST_F(RunTest, DefaultScenarioReportRendersInChromium) {
  const auto chromium = find_tool("chromium");
  if (!chromium) GTEST_SKIP() << "chromium is not installed (apt install chromium)";
  const std::string lab = lab_name("rh");
  LabGuard guard(lab);
  Outcome o = run(kDefaultScenario, lab);
  ASSERT_EQ(o.status, 0) << o;
  EXPECT_EQ(json_of(o)["report_dir"], dir_) << o;
  const std::string html = dir_ + "/report.html";
  ASSERT_TRUE(std::filesystem::exists(html));
  const std::string profile = dir_ + "/chromium";
  const Argv base = {*chromium,
                     "--headless",
                     "--no-sandbox",
                     "--disable-gpu",
                     "--disable-quic",
                     "--no-first-run",
                     "--disable-background-networking",
                     "--disable-component-update",
                     "--disable-sync",
                     "--user-data-dir=" + profile,
                     "--window-size=1000,2400"};
  Argv shot = base;
  shot.insert(shot.end(), {"--screenshot=" + dir_ + "/report.png", "file://" + html});
  Outcome s = itest::run(shot, 120s);
  ASSERT_EQ(s.status, 0) << s;
  const auto png = std::filesystem::file_size(dir_ + "/report.png");
  EXPECT_GT(png, 20000u) << "a near-empty screenshot";
  EXPECT_EQ(read_text(dir_ + "/report.png").substr(1, 3), "PNG");
  Argv dump = base;
  dump.insert(dump.end(), {"--dump-dom", "file://" + html});
  Outcome d = itest::run(dump, 120s);
  ASSERT_EQ(d.status, 0) << d;
  EXPECT_NE(d.out.find("<svg id=\"topology\""), std::string::npos);
  size_t links = 0;
  for (size_t at = d.out.find("class=\"link\""); at != std::string::npos;
       at = d.out.find("class=\"link\"", at + 1))
    ++links;
  EXPECT_EQ(links, 16u) << "4 leaves x (2 hosts + 2 spines)";
  // (The drop plot has a line too: the drops, or a flat one saying that there were none.)
  for (const char* id : {"busbw-plot", "link-plot", "drop-plot"}) {
    const auto at = d.out.find(std::string("<svg id=\"") + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    EXPECT_NE(d.out.find("<polyline points=\"", at), std::string::npos) << id << " has no line";
  }
  EXPECT_NE(read_text(dir_ + "/report.jsonl").find("{\"type\":\"sample\""), std::string::npos);
}

// A spine link fails during the allreduce: the switches route around it, the collective
// completes correctly on the remaining paths, the link carries nothing after the fault, and
// the report marks it.
TEST_F(RunTest, SpineLinkDownDuringAllreduceCompletesOnTheRemainingPaths) {
  TempScenario sc(faulty_scenario("  - {at: 1500ms, link: \"leaf1:spine1\", down: true}\n"));
  const std::string lab = lab_name("rd");
  LabGuard guard(lab);
  Outcome o = run(sc.path(), lab);
  ASSERT_EQ(o.status, 0) << o;
  EXPECT_TRUE(step_ok_and_correct(json_of(o), 0, 1)) << o;
  const nlohmann::json down = fault_record(json_of(o), "leaf1:spine1 down");
  ASSERT_TRUE(down.is_object()) << o;
  ASSERT_TRUE(down["done"]) << down;
  // The switches' routes moved (rather than "routes unchanged: no way around ...").
  EXPECT_TRUE(down["detail"].get<std::string>().starts_with("rerouted: ")) << down;
  const double at = down["applied_s"];
  EXPECT_GE(at, 1.5);
  EXPECT_LT(at, 2.5) << "applied late";
  // After the fault (and a moment for what was queued), leaf1>spine1 carries nothing.
  const std::string jsonl = read_text(dir_ + "/report.jsonl");
  const std::regex sample(
      R"re(\{"type":"sample","t_s":([0-9.e+-]+),.*?"name":"leaf1>spine1","bytes":(\d+))re");
  uint64_t settled = 0, last = 0;
  bool seen_settled = false;
  for (std::sregex_iterator it(jsonl.begin(), jsonl.end(), sample), end; it != end; ++it) {
    const double t = std::stod((*it)[1]);
    const uint64_t bytes = std::stoull((*it)[2]);
    if (t > at + 0.5 && !seen_settled) {
      settled = bytes;
      seen_settled = true;
    }
    last = bytes;
  }
  ASSERT_TRUE(seen_settled) << "no samples after the fault";
  EXPECT_EQ(last, settled) << "leaf1>spine1 still carried traffic after it went down";
  const std::string html = read_text(dir_ + "/report.html");
  EXPECT_NE(html.find("class=\"fault-marker\"><title>leaf1:spine1 down"), std::string::npos);
}

// A link that flaps through the whole allreduce: the step ends, in time, and says how.
TEST_F(RunTest, AFlappingLinkNeverHangsTheStep) {
  TempScenario sc(faulty_scenario(
      "  - {at: 500ms, link: \"leaf1:spine1\", flap: {count: 6, down: 300ms, up: 300ms, "
      "jitter: 100ms}}\n"
      "  - {at: 700ms, link: \"leaf2:spine2\", flap: {count: 6, down: 200ms, up: 400ms}, "
      "reroute: false}\n"));
  const std::string lab = lab_name("rf");
  LabGuard guard(lab);
  const auto start = Clock::now();
  Outcome o = run(sc.path(), lab, 240s);
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_NE(o.status, -1) << "run did not end: " << o;
  EXPECT_LT(secs, 200) << o;
  // Either way the step ends in a verdict, and the run's exit says which.
  const std::vector<nlohmann::json> steps = report_records(dir_, "step");
  ASSERT_EQ(steps.size(), 1u) << o;
  EXPECT_EQ(o.status, steps[0].value("ok", false) ? 0 : 1) << o;
  EXPECT_TRUE(fault_record(json_of(o), "leaf1:spine1 down (flap 1/6)").is_object()) << o;
}

// 3% on one spine link: the flows that hash onto it stay there (switches hash the headers, with
// seeds of their own), so the workload completes only if TCP keeps going through that loss;
// with 30% its backoffs outlast the step's timeout.
TEST_F(RunTest, AFailedExpectationFailsTheRun) {
  TempScenario sc(faulty_scenario("  - {at: 1s, link: \"leaf1:spine1\", set: {loss: 3%}}\n",
                                  "expect: {completes: true, max_drops: 0, busbw_min: 1gbit}\n"));
  const std::string lab = lab_name("re");
  LabGuard guard(lab);
  Outcome o = run(sc.path(), lab);
  EXPECT_EQ(o.status, 1) << o;
  const nlohmann::json run = json_of(o);
  EXPECT_FALSE(run["ok"]) << o;
  const nlohmann::json completes = expect_record(run, "completes: true");
  ASSERT_TRUE(completes.is_object()) << o;
  EXPECT_TRUE(completes["ok"]) << completes;
  // Failed, with the reason: the drops the link model counted.
  const nlohmann::json drops = expect_record(run, "max_drops 0: the link model dropped ");
  ASSERT_TRUE(drops.is_object()) << o;
  EXPECT_FALSE(drops["ok"]) << drops;
  const nlohmann::json busbw = expect_record(run, "busbw_min 1gbit");
  ASSERT_TRUE(busbw.is_object()) << o;
  EXPECT_FALSE(busbw["ok"]) << busbw;
}

// A straggler: the host's cgroup quota drops when the fault is due (and, without `for`, stays
// so; --keep leaves the lab up to look at it).
TEST_F(RunTest, ASlowHostFaultSetsItsCgroupQuota) {
  const std::map<std::string, std::string> cgroups = cgroup_mounts();
  std::string cpu_file;
  if (cgroups.count("2") &&
      read_text(cgroups.at("2") + "/cgroup.controllers").find("cpu") != std::string::npos)
    cpu_file = cgroups.at("2") + "/fabemu/%s/h3/cpu.max";
  else if (cgroups.count("cpu"))
    cpu_file = cgroups.at("cpu") + "/fabemu/%s/h3/cpu.cfs_quota_us";
  if (cpu_file.empty()) GTEST_SKIP() << "no cgroup v2 cpu controller and no v1 cpu hierarchy";
  TempScenario sc(faulty_scenario("  - {at: 200ms, host: h3, slow: {cpu: 0.05}}\n"));
  const std::string lab = lab_name("rs");
  LabGuard guard(lab);
  Outcome o = fabemu({"run", sc.path(), "--lab", lab, "--report", dir_, "--accept-degraded", "-q",
                      "--keep", "--json"},
                     300s);
  ASSERT_EQ(o.status, 0) << o;
  const nlohmann::json slow = fault_record(json_of(o), "h3 slowed to 0.05 CPU");
  ASSERT_TRUE(slow.is_object()) << o;
  EXPECT_TRUE(slow["done"]) << slow;  // the quota was written (else done is false, with why)
  EXPECT_EQ(slow["error"], "") << slow;
  cpu_file.replace(cpu_file.find("%s"), 2, lab);
  const std::string quota = read_text(cpu_file);
  EXPECT_TRUE(quota.starts_with("5000")) << cpu_file << ": " << quota;
}

TEST_F(RunTest, GraphWritesSvgAndDotOfAScenario) {
  Outcome svg = fabemu({"graph", kDefaultScenario, "-o", dir_ + "/t.svg"});
  ASSERT_EQ(svg.status, 0) << svg;
  EXPECT_TRUE(read_text(dir_ + "/t.svg").starts_with("<svg id=\"topology\""));
  Outcome dot = fabemu({"graph", kDefaultScenario, "--format", "dot"});
  ASSERT_EQ(dot.status, 0) << dot;
  EXPECT_NE(dot.out.find("\"leaf1\" -- \"spine1\""), std::string::npos) << dot;
  EXPECT_EQ(fabemu({"graph", "nolab"}).status, 3);
}

}  // namespace
}  // namespace fabemu::itest

namespace fabemu::itest {
namespace {

// A fault timeline longer than the workload must not pass unnoticed: x1000, a fault due after
// 100 ms of the real fabric is 100 s of wall clock, and a one-host `true` ends long before. The
// run says so and fails; `expect: {faults_played: any}` accepts it.
TEST_F(RunTest, AFaultTheWorkloadEndsBeforeFailsTheRunUnlessAccepted) {
  const std::string scenario =
      "name: late\ntime_scale: 1000\n"
      "topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}\n"
      "links: {default: {rate: 1gbit}}\nrdma: {enabled: off}\n"
      "workload:\n  - exec: {hosts: [h1], command: [\"true\"]}\n"
      "faults:\n  - {at: 100ms, link: \"leaf1:spine1\", down: true}\n";
  for (const bool accepted : {false, true}) {
    TempScenario sc(scenario + (accepted ? "expect: {faults_played: any}\n" : ""));
    const std::string lab = lab_name(accepted ? "rla" : "rl");
    LabGuard guard(lab);
    Outcome o = fabemu({"run", sc.path(), "--lab", lab, "--report", dir_, "--accept-degraded"});
    // A rendering check, kept on the terminal's text on purpose: the warning is worth having
    // only if the terminal shows it before the workload starts, and no JSON says when.
    EXPECT_NE(o.out.find("faults: 1 step, due 100ms of the real fabric (100.0 s of wall clock "
                         "at x1000)"),
              std::string::npos)
        << "said before the workload starts\n"
        << o;
    const nlohmann::json report = report_json(dir_);
    // Not played, and no error: the workload ended first. Due 100 ms real, 100 s wall.
    const nlohmann::json fault = fault_record(report, "leaf1:spine1 down");
    ASSERT_TRUE(fault.is_object()) << o;
    EXPECT_FALSE(fault["done"]) << fault;
    EXPECT_TRUE(fault["applied_s"].is_null()) << fault;
    EXPECT_EQ(fault["error"], "") << fault;
    EXPECT_NEAR(fault["due_s"].get<double>(), 0.1, 1e-9) << fault;
    EXPECT_NEAR(fault["wall_due_s"].get<double>(), 100, 1e-6) << fault;
    if (accepted) {
      EXPECT_EQ(o.status, 0) << o;
      const nlohmann::json e = expect_record(report, "faults_played: any (0 of 1 steps played");
      ASSERT_TRUE(e.is_object()) << o;
      EXPECT_TRUE(e["ok"]) << e;
    } else {
      EXPECT_EQ(o.status, 1) << o;
      const nlohmann::json e = expect_record(
          report, "faults_played: all (the default with a fault timeline) (0 of 1 steps played");
      ASSERT_TRUE(e.is_object()) << o;
      EXPECT_FALSE(e["ok"]) << e;
    }
  }
}

}  // namespace
}  // namespace fabemu::itest
