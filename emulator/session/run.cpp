// `run`'s workload phase: the steps in order, the fault timeline and the telemetry sampler on
// threads of their own beside them.
#include <algorithm>
#include <thread>

#include "runtime/faults.h"
#include "runtime/telemetry.h"
#include "session/session.h"
#include "util/files.h"
#include "util/units.h"

namespace fabemu::session {
namespace {

using Clock = std::chrono::steady_clock;

// Every 250 ms of wall clock, or the scenario's interval of the real fabric, dilated (but not
// below 20 ms: reading the counters costs the machine too).
std::chrono::milliseconds sampling_interval(const LabModel& m, Observer& observer) {
  const auto& real = m.scenario.telemetry.interval_ns;
  if (!real) return std::chrono::milliseconds(250);
  const uint64_t wall_ms = m.time_scale.wall_ns(*real) / 1'000'000;
  if (wall_ms < 20)
    observer.remark("note: telemetry every " + format_time_ns(*real) + " of the real fabric is " +
                    std::to_string(wall_ms) + " ms of wall clock; sampling every 20 ms instead");
  return std::chrono::milliseconds(std::max<uint64_t>(20, wall_ms));
}

}  // namespace

bool play_workload(const LabModel& m, const LabPaths& paths, const WorkloadOptions& wo,
                   Clock::time_point t0, RunReport& report, Observer& observer) {
  FaultPlayer faults(m, paths, expand_faults(m.scenario));
  TelemetrySampler telemetry(m, paths, sampling_interval(m, observer));
  std::this_thread::sleep_until(t0);  // a lab across machines: the common start
  telemetry.start(t0);
  faults.start(t0);
  bool ok = true;
  for (size_t i = 0; i < m.scenario.workload.size(); ++i) {
    const double start = seconds_since(t0);
    const StepResult r = run_step(m, paths, i, wo);
    const TimeScale& t = m.time_scale;
    StepReport s{r.title, r.ok, r.failure, t.real_s(start), t.real_s(r.seconds), start, r.seconds,
                 {},      {},   {},        r.note};
    s.flows = r.flows;
    if (const auto* c = std::get_if<CollectiveStep>(&m.scenario.workload[i].step)) {
      s.collective = c->collective;
      if (auto text = read_file(r.json_lines)) s.results = read_benchmark_results(*text);
    }
    observer.step_done(m, s, r.table);
    ok = ok && r.ok;
    report.steps.push_back(std::move(s));
  }
  faults.stop();
  telemetry.stop();
  report.faults = faults.log();
  report.samples = telemetry.samples();
  report.sample_slack_bytes = telemetry.slack_bytes();
  if (!telemetry.error().empty()) report.notes.push_back("telemetry: " + telemetry.error());
  return ok;
}

}  // namespace fabemu::session
