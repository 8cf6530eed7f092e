// `run`: the lab up, reachability, the workload phase (the steps in order, the fault timeline
// and the telemetry sampler on threads of their own beside them), the report, the lab down.
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <thread>

#include "results/ecmp_groups.h"
#include "runtime/faults.h"
#include "runtime/replay_step.h"
#include "runtime/telemetry.h"
#include "scenario/loader.h"
#include "session/across.h"
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

// "workload[2] of 4: allreduce": a step as `top` names it while it plays.
std::string step_label(const LabModel& m, size_t i) {
  struct Kind {
    std::string operator()(const CollectiveStep& c) const { return c.collective; }
    std::string operator()(const ExecStep& e) const {
      return "exec " + (e.command.empty() ? std::string() : e.command.front());
    }
    std::string operator()(const IncastStep&) const { return "incast"; }
    std::string operator()(const LinksStep&) const { return "links"; }
    std::string operator()(const LoadBalanceStep&) const { return "load_balance"; }
    std::string operator()(const ReplayStep& r) const { return "replay " + r.file; }
  };
  const size_t n = m.scenario.workload.size();
  return "workload[" + std::to_string(i) + "] of " + std::to_string(n) + ": " +
         std::visit(Kind{}, m.scenario.workload[i].step);
}

}  // namespace

bool play_workload(const LabModel& m, const LabPaths& paths, const WorkloadOptions& wo,
                   std::optional<Clock::time_point> common_start, RunReport& report,
                   Observer& observer) {
  FaultPlayer faults(m, paths, expand_faults(m.scenario));
  // Loads and verifies the link model's program: a second here, more on an emulated CPU.
  TelemetrySampler telemetry(m, paths, sampling_interval(m, observer));
  // The workload starts once both are ready (the faults' times count from there), or at a lab
  // across machines' common start.
  const Clock::time_point t0 = common_start.value_or(Clock::now());
  std::this_thread::sleep_until(t0);
  telemetry.start(t0);
  faults.start(t0);
  bool ok = true;
  // Each traffic step's ECMP groups, where the lab has any: how the mode in force spread it.
  const bool groups = !ecmp_groups(m).empty();
  // Where switches balance in eBPF: the flows' order at their last hop and TCP's reaction.
  const bool balanced = !balance_switches(m, paths).empty();
  for (size_t i = 0; i < m.scenario.workload.size(); ++i) {
    const WorkloadStep& w = m.scenario.workload[i];
    const bool traffic = groups && !std::holds_alternative<LinksStep>(w.step) &&
                         !std::holds_alternative<LoadBalanceStep>(w.step);
    std::optional<TelemetrySample> before;
    std::optional<OrderSnapshot> order_before;
    if (traffic) before = telemetry.mark();
    if (traffic && balanced) order_before = telemetry.order();
    if (const auto* rp = std::get_if<ReplayStep>(&w.step))
      observer.remark(describe_placement(m, *rp));
    const double start = seconds_since(t0);
    // For `top`: the step playing now, kept in this machine's run dir while it plays.
    (void)write_file(paths.step_file(), step_label(m, i) + "\n");
    StepResult r = run_step(m, paths, i, wo);
    ::unlink(paths.step_file().c_str());
    const TimeScale& t = m.time_scale;
    StepReport s{r.title, r.ok, r.failure, t.real_s(start), t.real_s(r.seconds), start, r.seconds,
                 {},      {},   {},        r.note};
    s.flows = r.flows;
    s.receiver_bps = r.receiver_bps;
    s.replay = std::move(r.replay);
    if (before) {
      const TelemetrySample after = telemetry.mark();
      s.groups = group_balances(m, [&](size_t d) { return growth(*before, after, d); });
    }
    if (order_before) s.order = order_growth(*order_before, telemetry.order());
    if (const auto* c = std::get_if<CollectiveStep>(&m.scenario.workload[i].step)) {
      s.collective = c->collective;
      s.library = c->library;
      s.transport = resolve_transport(c->transport, m.rdma.rxe);
      if (auto text = read_file(r.json_lines)) s.results = read_benchmark_results(*text);
    }
    if (const auto* p = std::get_if<ReplayStep>(&m.scenario.workload[i].step)) {
      s.library = "gloo";
      s.transport = resolve_transport(p->transport, m.rdma.rxe);
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

std::string default_report_dir(const std::string& lab) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return "fabemu-reports/" + lab + "-" + stamp;
}

namespace {

// report.html, report.jsonl and topology.svg in `dir` (made if missing).
Result<void> write_report(const LabModel& m, const RunReport& r, const std::string& dir) {
  FABEMU_TRY(make_dirs(dir));
  FABEMU_TRY(write_file(dir + "/report.jsonl", report_json_lines(m, r)));
  FABEMU_TRY(write_file(dir + "/topology.svg", topology_svg(m, &r)));
  return write_file(dir + "/report.html", report_html(m, r));
}

// The reachability check's answers counted into the report and shown; false, saying why the
// workload does not run, when the check failed or a pair did not answer.
bool reached(const LabModel& m, const Result<ReachabilityReport>& reach, double seconds,
             RunOutcome& out, Observer& observer) {
  if (!reach) {
    out.report.notes.push_back("reachability: " + reach.error().what());
    out.workload_not_run = "the fabric's reachability check failed";
    return false;
  }
  out.report.pairs = static_cast<int>(reach->pairs.size());
  out.report.reachable = reach->answered();
  out.report.reach_seconds = seconds;
  observer.reachability(m, *reach, seconds);
  if (out.report.reachable == out.report.pairs) return true;
  out.workload_not_run = "the fabric failed its reachability check";
  return false;
}

// Reachability and the workload on this machine's lab; false when either failed.
bool run_here(const UpOutcome& up, const LabPaths& base, RunOutcome& out, Observer& observer) {
  const LabModel& m = up.up.model;
  LabPaths paths = base;
  paths.lab = up.lab;
  const auto start = Clock::now();
  const auto reach = check_reachability(m, paths);
  if (!reached(m, reach, seconds_since(start), out, observer)) return false;
  if (m.scenario.workload.empty()) return true;
  WorkloadOptions wo = workload_options(m.scenario.file);
  if (auto staged = stage_binaries(wo, paths); !staged) {
    out.report.notes.push_back(staged.error().what());
    out.workload_not_run = "its programs could not be staged";
    return false;
  }
  return play_workload(m, paths, wo, std::nullopt, out.report, observer);
}

// The same across machines: every machine's hosts ping, every machine plays its part.
bool run_across(AcrossLab& lab, const LabPaths& base, RunOutcome& out, Observer& observer) {
  const LabModel& m = out.up.up.model;
  const auto start = Clock::now();
  const auto reach = reach_across(lab, base);
  if (!reached(m, reach, seconds_since(start), out, observer)) return false;
  return m.scenario.workload.empty() || workload_across(lab, m, base, out.report, observer);
}

// A replay's ranks share one machine's clock, memory and directory (docs/replay.md): across
// machines it is refused before any machine builds, rather than failing as a step once every
// machine has (and `--replay` is not what the machines' agents would read).
Result<void> refuse_replay_across(const UpRequest& req) {
  bool replays = !req.replay.empty();
  if (auto sc = load_scenario_file(req.scenario))
    for (const WorkloadStep& w : sc->workload)
      replays |= std::holds_alternative<ReplayStep>(w.step);
  if (!replays) return ok();
  return with_failure(make_error("a replay across machines is not supported yet; run it on one "
                                 "machine (without --on)"),
                      Failure::Unsupported);
}

}  // namespace

Result<RunOutcome> run(const RunRequest& req, const LabPaths& base, Observer& observer,
                       const std::atomic<int>* interrupt) {
  AcrossLab across;
  if (!req.up.on.empty()) FABEMU_TRY(refuse_replay_across(req.up));
  auto up = req.up.on.empty() ? up_lab(req.up, base, observer, interrupt)
                              : up_across(req.up, base, observer, across);
  if (!up) return up.error();
  RunOutcome out;
  out.up = std::move(*up);
  const LabModel& m = out.up.up.model;
  if (const std::string note = fault_timeline_note(m); !note.empty()) out.up.notes.push_back(note);
  observer.lab_up(out.up);
  RunReport& report = out.report;
  report.lab = out.up.lab;
  report.scenario_file = m.scenario.file;
  report.seed = m.scenario.seed;
  if (req.up.on.empty()) report.link_mode = out.up.up.plan_options;
  bool ok = req.up.on.empty() ? run_here(out.up, base, out, observer)
                              : run_across(across, base, out, observer);
  if (m.scenario.workload.empty()) out.workload_not_run.clear();
  report.not_run = out.workload_not_run;
  // A timeline that did not play at all is reported (and checked) step by step.
  if (report.faults.empty() && !m.scenario.faults.empty()) {
    report.faults = fault_log(m, expand_faults(m.scenario));
    for (AppliedFault& f : report.faults)
      f.error = m.scenario.workload.empty()
                    ? "not played: faults are timed from the workload's start, and there is none"
                    : "not played: the workload did not run";
  }
  report.expectations = check_expectations(m.scenario.expect, report);
  for (const ExpectResult& e : report.expectations) ok = ok && e.ok;
  out.report_dir = req.report_dir.empty() ? default_report_dir(report.lab) : req.report_dir;
  if (auto w = write_report(m, report, out.report_dir); !w) {
    out.report_error = w.error().context("writing the report");
    ok = false;
  }
  out.kept = req.keep;
  if (!req.keep) {
    auto down = session::down({{out.up.lab}, false, true, req.up.on}, base);
    if (!down)
      out.down_error = down.error();
    else
      out.down = std::move(*down);
  }
  out.ok = ok && !out.down_error && !(out.down && out.down->failure());
  return out;
}

Json RunOutcome::to_json() const {
  Json records = Json::array();
  for (Json& j : report_records(up.up.model, report))
    if (j.value("type", "") != "sample") records.push_back(std::move(j));
  return {{"schema", kSchemaVersion},
          {"command", "run"},
          {"lab", up.lab},
          {"ok", ok},
          {"report_dir", report_dir},
          {"kept", kept},
          {"up", up.to_json()},
          {"down", down ? down->to_json() : Json(nullptr)},
          {"records", records}};
}

}  // namespace fabemu::session
