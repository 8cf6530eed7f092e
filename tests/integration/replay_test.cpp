// Replayed training steps as users run them: SimAI's workload text through `run --replay`, a
// Chakra trace (written from the schema) as a scenario's step with its groups file, the same
// replay on a fabric with half the spine bandwidth through `--compare`, and a truncated file
// refused before anything is built.
#include <filesystem>
#include <fstream>
#include <string>

#include "../replay/chakra_trace.h"
#include "lab_fixture.h"

namespace fabemu::itest {
namespace {

const std::string kTpDp = kSourceDir + "/tests/data/replay/tp4-dp2.txt";

// 8 hosts, 4 under each of 2 leaves, 2 spines: 1:1 at `spine_rate` == 100 Mbit/s.
std::string leaf_spine(const std::string& spine_rate, const std::string& extra = "") {
  return "name: replay\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 4}\n"
         "links:\n  host-leaf: {rate: 100mbit}\n  leaf-spine: {rate: " +
         spine_rate + "}\nrdma: {enabled: off}\n" + extra;
}

class ReplayTest : public LabTest {
 protected:
  std::string write(const std::string& name, const std::string& text) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  TempDir tmp_{"fabemu-replay"};
  const std::string dir_ = tmp_.path();
};

// Every rank ran all its operations and the warm-up's elements all arrived right; the
// iteration's figures are there, beside the model's.
void expect_replayed(const std::string& report, const std::string& format, size_t iterations,
                     const std::string& output) {
  const auto replay = report_records(report, "replay");
  ASSERT_EQ(replay.size(), 1u) << output;
  EXPECT_EQ(replay[0]["format"], format);
  EXPECT_EQ(replay[0]["ranks"], 8);
  EXPECT_GT(replay[0]["checked"].get<uint64_t>(), 0u) << replay[0];
  EXPECT_EQ(replay[0]["wrong"], 0) << replay[0];
  EXPECT_GT(replay[0]["model_iteration_s"].get<double>(), 0) << replay[0];
  const auto its = report_records(report, "replay_iteration");
  ASSERT_EQ(its.size(), iterations) << output;
  for (const auto& it : its) {
    EXPECT_GT(it["time_s"].get<double>(), 0) << it;
    EXPECT_GT(it["ratio"].get<double>(), 0) << it;
    if (format != "simai") continue;  // Chakra's nodes do not say their pass
    for (const char* pass : {"forward", "input_gradient", "weight_gradient"}) {
      EXPECT_TRUE(it["passes"].contains(pass)) << pass << " missing: " << it;
    }
  }
  const auto timelines = report_records(report, "replay_timeline");
  ASSERT_EQ(timelines.size(), 8u) << output;
  for (const auto& t : timelines) EXPECT_FALSE(t["ops"].empty()) << t;
}

// SimAI's text, 8 ranks TP4 x DP2: each TP group under one leaf, the placement said before the
// step, the iteration's time printed beside the model's.
TEST_F(ReplayTest, SimaiWorkloadReplaysWithEveryCollectiveChecked) {
  const std::string scenario = write("scenario.yaml", leaf_spine("100mbit"));
  const std::string lab = lab_name("ys");
  LabGuard guard(lab);
  Outcome o = fabemu({"run", scenario, "--replay", kTpDp, "--lab", lab, "--report", dir_ + "/r",
                      "--accept-degraded"},
                     300s);
  ASSERT_EQ(o.status, 0) << o;
  // The placement, as a remark before the step (stderr).
  EXPECT_NE(o.err.find("placement: 0 h1, 1 h2, 2 h3, 3 h4, 4 h5"), std::string::npos) << o;
  EXPECT_NE(o.err.find("tp groups under one switch: 2 of 2"), std::string::npos) << o;
  EXPECT_NE(o.out.find("iteration 1: iteration time: "), std::string::npos) << o;
  EXPECT_NE(o.out.find(" (model "), std::string::npos) << o;
  EXPECT_NE(o.out.find(", 0 wrong"), std::string::npos) << o;
  expect_replayed(dir_ + "/r", "simai", 1, o.out);
  // The HTML report: the iterations beside the model and a timeline row per rank.
  const std::string html = read_text(dir_ + "/r/report.html");
  EXPECT_NE(html.find("<table class=\"replay-iterations\">"), std::string::npos);
  const auto svg = html.find("<svg class=\"replay-timeline\" id=\"replay-timeline-0\"");
  ASSERT_NE(svg, std::string::npos);
  EXPECT_NE(html.find("<title>rank 7: allreduce 256K on tp [4-7]", svg), std::string::npos);
}

// Two pipeline stages (TP2 x DP2 each, one stage under each leaf): the second stage's ranks
// begin by receiving the first's activations and end by sending their gradients back.
TEST_F(ReplayTest, PipelineStagesPassActivationsAcrossTheSpines) {
  const std::string scenario = write("scenario.yaml", leaf_spine("100mbit"));
  const std::string lab = lab_name("yp");
  LabGuard guard(lab);
  Outcome o =
      fabemu({"run", scenario, "--replay", kSourceDir + "/tests/data/replay/tp2-dp2-pp2.txt",
              "--lab", lab, "--report", dir_ + "/r", "--accept-degraded"},
             300s);
  ASSERT_EQ(o.status, 0) << o;
  EXPECT_NE(o.err.find("pp_fwd groups under one switch: 0 of 4"), std::string::npos) << o;
  expect_replayed(dir_ + "/r", "simai", 1, o.out);
  for (const auto& t : report_records(dir_ + "/r", "replay_timeline")) {
    if (t["rank"].get<int>() < 4) continue;
    EXPECT_EQ(t["ops"].front()["what"],
              "receive 256K from " + std::to_string(t["rank"].get<int>() - 4))
        << t;
    bool sent_back = false;
    for (const auto& op : t["ops"])
      sent_back |= op["what"] == "send 256K to " + std::to_string(t["rank"].get<int>() - 4);
    EXPECT_TRUE(sent_back) << t;
  }
}

// A Chakra trace per rank, its process groups in ASTRA-sim's JSON, as a scenario's step; the
// send from rank 0 to rank 4 and two iterations.
TEST_F(ReplayTest, ChakraTraceReplaysAsAScenarioStep) {
  const auto ranks = testing::tp_dp_trace(256 << 10, 1 << 20, 2000);
  for (size_t r = 0; r < ranks.size(); ++r) write("step." + std::to_string(r) + ".et", ranks[r]);
  write("groups.json", testing::tp_dp_groups_json());
  const std::string scenario =
      write("scenario.yaml",
            leaf_spine("100mbit",
                       "workload:\n  - replay: {file: step, format: chakra, comm_groups: "
                       "groups.json, iterations: 2, timeout: 120s}\n"));
  const std::string lab = lab_name("yc");
  LabGuard guard(lab);
  Outcome o =
      fabemu({"run", scenario, "--lab", lab, "--report", dir_ + "/r", "--accept-degraded"}, 300s);
  ASSERT_EQ(o.status, 0) << o;
  EXPECT_NE(o.out.find("iteration 2: iteration time: "), std::string::npos) << o;
  expect_replayed(dir_ + "/r", "chakra", 2, o.out);
  // Rank 4's timeline holds the receive.
  for (const auto& t : report_records(dir_ + "/r", "replay_timeline")) {
    if (t["rank"] != 4) continue;
    bool received = false;
    for (const auto& op : t["ops"])
      received |= op["what"].get<std::string>().starts_with("receive ");
    EXPECT_TRUE(received) << t;
  }
}

// Half the spine bandwidth (2:1): the data-parallel allreduces cross the spines, so the
// iteration is slower, and the model says so too.
TEST_F(ReplayTest, CompareOnOversubscriptionFollowsTheModel) {
  const std::string one = write("one-to-one.yaml", leaf_spine("100mbit"));
  const std::string two = write("two-to-one.yaml", leaf_spine("50mbit"));
  const std::string lab = lab_name("yo");
  LabGuard guard(lab);
  Outcome o = fabemu(
      {"run", one, "--replay", kTpDp, "--compare", two, "--lab", lab, "--accept-degraded"}, 400s);
  ASSERT_EQ(o.status, 0) << o;
  const auto at = o.out.find("compare (mean iteration time, real fabric):");
  ASSERT_NE(at, std::string::npos) << o;
  const std::string table = o.out.substr(at);
  EXPECT_NE(table.find("two-to-one.yaml"), std::string::npos) << table;
  EXPECT_NE(table.find("% against the first"), std::string::npos) << table;
  EXPECT_NE(table.find("the same direction"), std::string::npos) << table;
  EXPECT_EQ(table.find("against the first, model -"), std::string::npos)
      << "model faster? " << table;
}

// A truncated workload: exit 2 naming the file, the line and what is missing; no lab built.
TEST_F(ReplayTest, ATruncatedWorkloadIsRefusedBeforeAnythingIsBuilt) {
  const std::string scenario = write("scenario.yaml", leaf_spine("100mbit"));
  const std::string lab = lab_name("yt");
  LabGuard guard(lab);
  Outcome o = fabemu(
      {"run", scenario, "--replay", kSourceDir + "/tests/data/replay/truncated.txt", "--lab", lab});
  EXPECT_EQ(o.status, 2) << o;
  EXPECT_NE(o.err.find("truncated.txt:4: layer 2: missing: the file ends after 1 of 2 layers"),
            std::string::npos)
      << o;
  EXPECT_TRUE(lab_namespaces(lab).empty());
  EXPECT_FALSE(std::filesystem::exists(run_dir(lab)));
}

}  // namespace
}  // namespace fabemu::itest
