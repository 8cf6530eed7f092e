// The report of a run: what `fabemu run` measured and did, as JSON lines, as a self-contained
// HTML page (an SVG picture of the topology, busbw per size, link counters over time with the
// fault events marked) and the topology alone as SVG or Graphviz DOT (`fabemu graph`).
#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"
#include "runtime/faults.h"
#include "runtime/telemetry.h"
#include "runtime/workload.h"

namespace fabemu {

struct StepReport {
  std::string title;
  bool ok = false;
  std::string failure;
  // Relative to the workload's start, in the real fabric's time; and on the wall clock (N
  // times longer in a dilated lab).
  double start_s = 0, seconds = 0;
  double wall_start_s = 0, wall_seconds = 0;
  std::string collective;  // empty for exec steps
  std::vector<SizeResult> results;
  std::vector<FlowResult> flows;  // incast steps
  std::string note;  // about the results (far below the prediction: the machine set the speed)
};

struct ExpectResult {
  std::string what;  // "busbw_min 20 Mbit/s: workload[0] 2.93 MB/s at 1 MiB"
  bool ok = false;
};

struct RunReport {
  std::string lab, scenario_file;
  uint64_t seed = 0;
  int reachable = 0, pairs = 0;
  std::vector<StepReport> steps;
  std::vector<AppliedFault> faults;
  std::vector<TelemetrySample> samples;
  std::vector<ExpectResult> expectations;
  std::vector<std::string> notes;  // what went wrong beside the workload (telemetry unreadable)
};

// Checks the scenario's `expect:` against the report; the results in scenario order.
std::vector<ExpectResult> check_expectations(const Expectations& e, const RunReport& r);

// How direction `d`'s counters grew from one sample to a later one (0 for a counter that went
// back, as when the model is attached to a port mid-run); `shaped` and the queue delay are the
// later sample's.
DirectionSample growth(const TelemetrySample& from, const TelemetrySample& to, size_t d);
// The same from the first sample to the last (zeros without two), and the time between them.
DirectionSample run_growth(const RunReport& r, size_t d);
double run_seconds(const RunReport& r);

// Frames the link model dropped during the run, all directions (last sample minus first).
uint64_t run_drops(const RunReport& r);

std::string report_json_lines(const LabModel& m, const RunReport& r);
std::string report_html(const LabModel& m, const RunReport& r);

// The topology picture; with a report, links are coloured by how busy they were (bytes over the
// run against their rate) and drawn red where frames were dropped.
std::string topology_svg(const LabModel& m, const RunReport* r = nullptr);
std::string topology_dot(const LabModel& m);

}  // namespace fabemu
