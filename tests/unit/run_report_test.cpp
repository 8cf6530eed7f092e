// `fabemu run`'s pure parts: the fault timeline (parsing, expansion, seeded jitter), routes
// around failed links, expectations, and what the report and the graph contain.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fake_lab.h"
#include "report/report.h"
#include "runtime/faults.h"

namespace fabemu {
namespace {

using unit::load;

const std::string kFaulty = R"(name: f
seed: 5
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links: {default: {rate: 25mbit}}
workload:
  - {collective: allreduce, sizes: [64K, 1M]}
faults:
  - {at: 1s, link: "leaf1:spine1", flap: {count: 3, down: 200ms, up: 300ms, jitter: 50ms}}
  - {at: 500ms, host: h3, slow: {cpu: 0.1, for: 2s}}
  - {at: 4s, link: "leaf2>spine2", set: {loss: 1%}}
  - {at: 5s, link: "leaf2:spine1", down: true, reroute: false}
expect: {completes: true, busbw_min: 10mbit, max_drops: 50}
)";

std::string with_seed(std::string yaml, int seed) {
  yaml.replace(yaml.find("seed: 5"), 7, "seed: " + std::to_string(seed));
  return yaml;
}

TEST(Faults, ParseFlapsSlowHostsAndExpectations) {
  Scenario s = load(kFaulty);
  ASSERT_EQ(s.faults.size(), 4u);
  ASSERT_TRUE(s.faults[0].flap);
  EXPECT_EQ(s.faults[0].flap->count, 3);
  EXPECT_EQ(s.faults[0].flap->down_ns, 200'000'000u);
  EXPECT_EQ(s.faults[1].host, "h3");
  EXPECT_DOUBLE_EQ(*s.faults[1].slow_cpu, 0.1);
  EXPECT_EQ(s.faults[1].for_ns, 2'000'000'000u);
  EXPECT_FALSE(s.faults[3].reroute);
  EXPECT_EQ(*s.expect.busbw_min_bps, 10'000'000u);
  EXPECT_EQ(*s.expect.max_drops, 50u);
  EXPECT_TRUE(*s.expect.completes);
}

TEST(Faults, ExpansionUnrollsFlapsAndRestoresAndRepeatsForASeed) {
  const auto steps = expand_faults(load(kFaulty));
  // 3 flaps (down + up each), slow + restore, set, down.
  ASSERT_EQ(steps.size(), 10u);
  EXPECT_TRUE(std::is_sorted(steps.begin(), steps.end(),
                             [](const auto& a, const auto& b) { return a.at_ns < b.at_ns; }));
  EXPECT_EQ(steps[0].kind, FaultStep::Kind::Cpu);  // 500 ms
  EXPECT_EQ(steps[1].kind, FaultStep::Kind::Down);
  EXPECT_EQ(steps[1].at_ns, 1'000'000'000u);
  EXPECT_EQ(steps[1].what, "leaf1:spine1 down (flap 1/3)");
  // Each period is its length plus up to the jitter.
  EXPECT_GE(steps[2].at_ns - steps[1].at_ns, 200'000'000u);
  EXPECT_LE(steps[2].at_ns - steps[1].at_ns, 250'000'000u);
  EXPECT_EQ(steps[2].kind, FaultStep::Kind::Up);
  auto restore = std::find_if(steps.begin(), steps.end(), [](const FaultStep& s) {
    return s.kind == FaultStep::Kind::Cpu && !s.cpu;
  });
  ASSERT_NE(restore, steps.end());
  EXPECT_EQ(restore->at_ns, 2'500'000'000u);

  auto times = [](const std::vector<FaultStep>& v) {
    std::vector<uint64_t> out;
    for (const auto& s : v) out.push_back(s.at_ns);
    return out;
  };
  EXPECT_EQ(times(expand_faults(load(kFaulty))), times(steps)) << "same seed, same timeline";
  EXPECT_NE(times(expand_faults(load(with_seed(kFaulty, 6)))), times(steps))
      << "another seed, other jitter";
}

TEST(Faults, SeedsOfTheLossSequencesRepeatForASeed) {
  auto a = unit::apply_fake(kFaulty), b = unit::apply_fake(kFaulty);
  auto c = unit::apply_fake(with_seed(kFaulty, 6));
  ASSERT_TRUE(a && b && c);
  auto seeds = [](const Plan& p) {
    std::vector<uint64_t> out;
    for (const Action& act : p.actions)
      if (const auto* s = std::get_if<ShapePort>(&act)) out.push_back(s->seed);
    return out;
  };
  EXPECT_FALSE(seeds(a->plan).empty());
  EXPECT_EQ(seeds(a->plan), seeds(b->plan));
  EXPECT_NE(seeds(a->plan), seeds(c->plan));
}

TEST(Faults, ASlowedHostGetsACgroupWithoutLimits) {
  auto a = unit::apply_fake(kFaulty);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->fake.cgroups.count("fabemu/t/h3"));
  EXPECT_FALSE(a->fake.cgroups.count("fabemu/t/h1"));
}

TEST(Faults, HostAndOneWayFaultsAreCheckedAgainstTheTopology) {
  auto unknown = build_model(load("name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, "
                                  "hosts_per_leaf: 1}\nfaults:\n  - {at: 1s, host: h9, slow: "
                                  "{cpu: 0.1}}\n"),
                             0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().what().find("test.yaml:4:5: faults.host: no host named 'h9'"),
            std::string::npos)
      << unknown.error().what();
  auto one_way = build_model(load("name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, "
                                  "hosts_per_leaf: 1}\nfaults:\n  - {at: 1s, link: leaf1>spine1, "
                                  "down: true}\n"),
                             0);
  ASSERT_FALSE(one_way.ok());
  EXPECT_NE(one_way.error().what().find("one direction"), std::string::npos);
}

TEST(Reroute, RoutesAroundAFailedLinkUseOnlyTheOthers) {
  auto m = build_model(load(kFaulty), 0);
  ASSERT_TRUE(m.ok());
  const Topology& t = m->topo;
  const auto failed = find_links(t, "leaf1", "spine1");
  ASSERT_EQ(failed.size(), 1u);
  auto routes = plan_routes(t, m->addresses, {failed.front()});
  ASSERT_TRUE(routes.ok());
  size_t via_spine2 = 0;
  for (int sw : t.switches())
    for (const Route& r : (*routes)[sw])
      for (const Nexthop& h : r.nexthops) {
        EXPECT_NE(h.link, failed.front()) << t.nodes[sw].name << " " << r.dst.str();
        via_spine2 += t.nodes[sw].name == "leaf1";
      }
  EXPECT_GT(via_spine2, 0u);
  // Cut leaf1 off both spines: no way around, said so.
  auto both = find_links(t, "leaf1", "spine2");
  EXPECT_FALSE(plan_routes(t, m->addresses, {failed.front(), both.front()}).ok());
}

// A report of one collective step and two samples of `directions` link directions, the first of
// which dropped `drops` frames.
RunReport report_with(double busbw_gbps, uint64_t drops, bool ok, size_t directions = 2) {
  RunReport r;
  r.reachable = r.pairs = 12;
  StepReport s;
  s.title = "workload[0] allreduce (gloo, tcp)";
  s.ok = ok;
  s.collective = "allreduce";
  s.results = {{65536, 10, busbw_gbps / 10, -1, 0, {}}, {1 << 20, 100, busbw_gbps, 0.003, 0, {}}};
  r.steps.push_back(s);
  TelemetrySample a, b;
  a.dirs.resize(directions);
  b.dirs.resize(directions);
  a.dirs[0].shaped = b.dirs[0].shaped = true;
  b.dirs[0].drops = drops;
  b.dirs[0].bytes = 1000;
  b.t_s = 1;
  r.samples = {a, b};
  return r;
}

TEST(Expectations, EachIsCheckedAgainstTheRun) {
  const Scenario s = load(kFaulty);
  auto good = check_expectations(s.expect, report_with(0.003, 10, true));
  ASSERT_EQ(good.size(), 3u);
  for (const auto& e : good) EXPECT_TRUE(e.ok) << e.what;
  auto bad = check_expectations(s.expect, report_with(0.0005, 51, false));
  ASSERT_EQ(bad.size(), 3u);
  for (const auto& e : bad) EXPECT_FALSE(e.ok) << e.what;
  EXPECT_NE(bad[0].what.find("failed: workload[0]"), std::string::npos) << bad[0].what;
  EXPECT_NE(bad[1].what.find("at 1M"), std::string::npos) << bad[1].what;  // the largest size
  EXPECT_NE(bad[2].what.find("dropped 51 frames"), std::string::npos) << bad[2].what;
  // A workload that never ran did not complete, though no step failed.
  RunReport none = report_with(0.003, 10, true);
  none.steps.clear();
  none.not_run = "its programs could not be staged";
  auto unrun = check_expectations(s.expect, none);
  EXPECT_FALSE(unrun[0].ok);
  EXPECT_NE(unrun[0].what.find("the workload did not run: its programs could not be staged"),
            std::string::npos)
      << unrun[0].what;
}

// A fault timeline that did not play to its end fails the run, unless the scenario accepts it.
TEST(Expectations, EveryFaultMustBePlayedUnlessTheScenarioSaysAny) {
  const Scenario s = load(kFaulty);
  auto m = build_model(s, 0);
  ASSERT_TRUE(m.ok());
  RunReport r = report_with(0.003, 10, true);
  r.faults = fault_log(*m, expand_faults(s));
  for (size_t i = 0; i + 1 < r.faults.size(); ++i) r.faults[i].done = true;
  auto e = check_expectations(s.expect, r);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_FALSE(e[3].ok) << e[3].what;
  EXPECT_NE(e[3].what.find("9 of 10 steps played"), std::string::npos) << e[3].what;
  EXPECT_NE(e[3].what.find("leaf2:spine1 down (no reroute) due 5s"), std::string::npos)
      << e[3].what;
  EXPECT_NE(e[3].what.find("the workload ended first"), std::string::npos) << e[3].what;
  EXPECT_NE(e[3].what.find("faults_played: any"), std::string::npos) << "says the way out";
  Expectations any = s.expect;
  any.faults_played = Expectations::FaultsPlayed::Any;
  e = check_expectations(any, r);
  EXPECT_TRUE(e[3].ok) << e[3].what;
  r.faults.back().done = true;
  e = check_expectations(s.expect, r);
  EXPECT_TRUE(e[3].ok) << e[3].what;
}

TEST(Expectations, FaultsPlayedIsReadAndCheckedForItsWords) {
  Scenario s = load(R"(name: f
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
expect: {faults_played: any}
)");
  EXPECT_EQ(s.expect.faults_played, Expectations::FaultsPlayed::Any);
  auto bad = load_scenario_string(R"(name: f
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
expect: {faults_played: some}
)",
                                  "bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("bad.yaml:3:"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("expect.faults_played"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("valid: all, any"), std::string::npos) << bad.error().message;
}

// Before the workload starts, `run` says when the last fault is due on the wall clock and which
// steps the workload, by the link model, ends before.
TEST(Faults, TheTimelineNoteSaysWhichStepsComeAfterTheWorkload) {
  auto m = build_model(load(R"(name: f
time_scale: 2500
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links: {default: {rate: 100gbit, delay: 1us}}
workload:
  - {collective: allreduce, sizes: [1M], iterations: 3}
faults:
  - {at: 10us, link: "leaf1:spine1", set: {loss: 1%}}
  - {at: 1s, link: "leaf1:spine1", down: true}
)"),
                       0);
  ASSERT_TRUE(m.ok());
  const std::string note = fault_timeline_note(*m);
  EXPECT_NE(note.find("the last due 1s of the real fabric (2500.0 s of wall clock at x2500)"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("1 step will come after its end"), std::string::npos) << note;
  EXPECT_NE(note.find("faults_played: any"), std::string::npos) << note;
}

TEST(Report, HtmlHasTheTopologyThePlotsAndTheFaultsAndJsonLinesEveryRecord) {
  auto m = build_model(load(kFaulty), 0);
  ASSERT_TRUE(m.ok());
  RunReport r = report_with(0.003, 10, true, 2 * m->topo.links.size());
  AppliedFault f;
  f.step.what = "leaf1:spine1 down (flap 1/3)";
  f.done = true;
  f.applied_s = 0.5;
  r.faults.push_back(f);
  r.expectations = check_expectations(m->scenario.expect, r);
  const std::string html = report_html(*m, r);
  EXPECT_NE(html.find("<svg id=\"topology\""), std::string::npos);
  size_t links = 0;
  for (size_t at = html.find("class=\"link\""); at != std::string::npos;
       at = html.find("class=\"link\"", at + 1))
    ++links;
  EXPECT_EQ(links, m->topo.links.size());
  EXPECT_NE(html.find("<svg id=\"busbw-plot\""), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"link-plot\""), std::string::npos);
  EXPECT_NE(html.find("class=\"fault-marker\""), std::string::npos);
  EXPECT_NE(html.find("leaf1:spine1 down (flap 1/3)"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos) << "self-contained and inert";
  const std::string jsonl = report_json_lines(*m, r);
  for (const char* type : {"run", "step", "result", "fault", "sample", "expect"})
    EXPECT_NE(jsonl.find(std::string("{\"type\":\"") + type + "\""), std::string::npos) << type;
}

TEST(Report, ADropPlotWithoutDropsSaysSo) {
  auto m = build_model(load(kFaulty), 0);
  ASSERT_TRUE(m.ok());
  RunReport r = report_with(0.003, 0, true, 2 * m->topo.links.size());
  const std::string html = report_html(*m, r);
  const auto plot = html.find("<svg id=\"drop-plot\"");
  ASSERT_NE(plot, std::string::npos);
  EXPECT_NE(html.find("no link dropped a frame", plot), std::string::npos);
  EXPECT_NE(html.find("<polyline", plot), std::string::npos);
}

// PFC: a pause plot where a link was paused (the share of each interval), none where none was;
// the incast step's flows are JSON lines of their own.
TEST(Report, PausesArePlottedWhereALinkWasPausedAndFlowsAreRecorded) {
  auto m = build_model(load(kFaulty), 0);
  ASSERT_TRUE(m.ok());
  RunReport r = report_with(0.003, 0, true, 2 * m->topo.links.size());
  EXPECT_EQ(report_html(*m, r).find("<svg id=\"pause-plot\""), std::string::npos);
  r.samples[1].dirs[0].pause_ns = 250'000'000;  // a quarter of the 1 s between the samples
  r.samples[1].dirs[0].pause_events = 3;
  r.steps[0].flows.push_back({"incast", "h2", "h1", 6.25e6, 6.25e6, 0.0, 0, 0.0, ""});
  const std::string html = report_html(*m, r);
  const auto plot = html.find("<svg id=\"pause-plot\"");
  ASSERT_NE(plot, std::string::npos);
  EXPECT_NE(html.find("<polyline", plot), std::string::npos);
  const std::string jsonl = report_json_lines(*m, r);
  EXPECT_NE(jsonl.find("\"pause_ns\":250000000"), std::string::npos);
  EXPECT_NE(jsonl.find("{\"type\":\"flow\",\"step\":0,\"role\":\"incast\",\"from\":\"h2\""),
            std::string::npos)
      << jsonl.substr(0, 3000);
}

TEST(Report, DotNamesEveryLink) {
  auto m = build_model(load(kFaulty), 0);
  ASSERT_TRUE(m.ok());
  const std::string dot = topology_dot(*m);
  EXPECT_TRUE(dot.starts_with("graph \"f\" {"));
  EXPECT_NE(dot.find("\"h1\" -- \"leaf1\" [label=\"rate 25mbit"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"leaf1\" -- \"spine1\""), std::string::npos) << dot;
}

TEST(Report, BenchmarkResultsAreReadBack) {
  const std::string lines =
      "{\"type\":\"result\",\"collective\":\"allreduce\",\"size\":1048576,\"time_us\":12.5,"
      "\"busbw_gbps\":0.003,\"wrong\":0,\"rank_time_us\":[12.0,13.0],"
      "\"iteration_time_us\":[11.0,14.0],\"pred_busbw_gbps\":null}\n"
      "{\"type\":\"summary\",\"ok\":true}\n{\"type\":\"result\",\"size\":";
  auto r = read_benchmark_results(lines);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].size, 1048576u);
  EXPECT_DOUBLE_EQ(r[0].busbw_gbps, 0.003);
  EXPECT_LT(r[0].pred_busbw_gbps, 0);
  EXPECT_EQ(r[0].rank_time_us.size(), 2u);
  EXPECT_EQ(r[0].iteration_time_us, (std::vector<double>{11.0, 14.0}));
}

}  // namespace
}  // namespace fabemu
