// A run across machines: each machine's part of the report survives its JSON, and the parts
// merge into one report (steps, faults, telemetry by the machine each direction leaves).
#include <gtest/gtest.h>

#include "fake_lab.h"
#include "model/lab_model.h"
#include "plan/partition.h"
#include "report/run_part.h"
#include "runtime/faults.h"

namespace fabemu {
namespace {

using unit::load;

const std::string kLab = R"(name: p
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
links: {default: {rate: 25mbit}}
placement: [[leaf1], [leaf2, spine1]]
workload:
  - {collective: allreduce, sizes: [64K]}
faults:
  - {at: 1s, link: "leaf1:spine1", down: true}
  - {at: 2s, link: "leaf2>spine1", set: {loss: 1%}}
)";

LabModel across_two() {
  auto m = build_model(load(kLab), 0);
  EXPECT_TRUE(m.ok());
  auto p = partition(*m, 2);
  EXPECT_TRUE(p.ok());
  m->part = MachinePart{-1, {"m1", "m2"}, {}, "", "/shared", *p};
  return *m;
}

// Machine `k`'s part: its own directions counted `base` + the direction's index, the others 0.
RunReport part_of(const LabModel& m, int k, const std::vector<FaultStep>& faults) {
  RunReport r;
  StepReport s;
  s.title = "workload[0] allreduce (gloo, tcp)";
  s.ok = k == 0;
  s.failure = k == 0 ? "" : "h2 exited with 1";
  s.start_s = 0.01 * k;
  s.seconds = 1.0 + k;
  s.wall_start_s = s.start_s;
  s.wall_seconds = s.seconds;
  s.collective = "allreduce";
  r.steps.push_back(s);
  for (size_t i = 0; i < faults.size(); ++i) {
    AppliedFault f;
    f.step = faults[i];
    f.due_s = f.applied_s = double(faults[i].at_ns) / 1e9;
    f.done = true;
    // The link goes down on both machines' ends: each reroutes its own switches.
    if (faults[i].kind == FaultStep::Kind::Down)
      f.detail = "rerouted: " + std::to_string(2 + k) + " route changes on 1 switches";
    else
      f.detail = k == 1 ? "link model updated" : kElsewhere;
    r.faults.push_back(f);
  }
  const Topology& t = m.topo;
  for (int sample = 0; sample < 3 - k; ++sample) {  // m2 stopped one sample earlier
    TelemetrySample ts;
    ts.t_s = ts.wall_s = 0.25 * sample;
    ts.dirs.resize(2 * t.links.size());
    for (size_t d = 0; d < ts.dirs.size(); ++d) {
      const Link& l = t.links[d / 2];
      if (m.part->placement.machine_of[d % 2 ? l.b.node : l.a.node] != k) continue;
      ts.dirs[d].bytes = 1000 * (sample + 1) + d;
      ts.dirs[d].shaped = true;
    }
    ts.rxe["h" + std::to_string(k + 1)] = {{"sent_pkts", 7u}};
    r.samples.push_back(ts);
  }
  return r;
}

TEST(RunParts, APartSurvivesItsJson) {
  const LabModel m = across_two();
  const auto faults = expand_faults(m.scenario);
  const RunReport part = part_of(m, 1, faults);
  auto back = parse_run_part(run_part_text(part), "part-1.json", faults);
  ASSERT_TRUE(back.ok()) << back.error().what();
  ASSERT_EQ(back->steps.size(), 1u);
  EXPECT_EQ(back->steps[0].failure, "h2 exited with 1");
  EXPECT_DOUBLE_EQ(back->steps[0].seconds, 2.0);
  ASSERT_EQ(back->faults.size(), faults.size());
  EXPECT_EQ(back->faults[1].detail, "link model updated");
  EXPECT_EQ(back->faults[1].step.target, faults[1].target);
  ASSERT_EQ(back->samples.size(), 2u);
  EXPECT_EQ(back->samples[1].dirs, part.samples[1].dirs);
  EXPECT_EQ(back->samples[1].rxe.at("h2").at("sent_pkts"), 7u);

  // Not a part, or a part of another scenario: an error naming the file.
  EXPECT_NE(parse_run_part("[]", "x.json", faults).error().what().find("x.json: not a run part"),
            std::string::npos);
  EXPECT_FALSE(parse_run_part(run_part_text(part), "x.json", {}).ok());
}

TEST(RunParts, TheMergeTakesEachThingFromTheMachineThatHasIt) {
  const LabModel m = across_two();
  const auto faults = expand_faults(m.scenario);
  const RunReport merged =
      merge_run_parts(m, {"m1", "m2"}, {part_of(m, 0, faults), part_of(m, 1, faults)});
  // A step failed if it failed anywhere, naming the machine; as long as its slowest machine.
  ASSERT_EQ(merged.steps.size(), 1u);
  EXPECT_FALSE(merged.steps[0].ok);
  EXPECT_EQ(merged.steps[0].failure, "m2: h2 exited with 1");
  EXPECT_DOUBLE_EQ(merged.steps[0].seconds, 2.0);
  EXPECT_DOUBLE_EQ(merged.steps[0].start_s, 0.0);
  // Reroutes counted over the machines; a shape change is its owner's.
  ASSERT_EQ(merged.faults.size(), 2u);
  EXPECT_EQ(merged.faults[0].detail, "rerouted: 5 route changes on 2 switches");
  EXPECT_EQ(merged.faults[1].detail, "link model updated");
  // Samples matched by index (as many as every machine has); each direction from the machine
  // it leaves.
  ASSERT_EQ(merged.samples.size(), 2u);
  const Topology& t = m.topo;
  for (size_t d = 0; d < merged.samples[1].dirs.size(); ++d) {
    EXPECT_EQ(merged.samples[1].dirs[d].bytes, 2000 + d) << direction_name(t, int(d / 2), d % 2);
    EXPECT_TRUE(merged.samples[1].dirs[d].shaped);
  }
  EXPECT_EQ(merged.samples[0].rxe.size(), 2u);
}

}  // namespace
}  // namespace fabemu
