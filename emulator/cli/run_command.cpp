// `run`: build the lab, check reachability, run the workload while the fault timeline plays and
// telemetry is sampled, print the summary, write the report, check expectations, tear down.
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <memory>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "cli/commands.h"
#include "report/junit.h"
#include "report/report.h"
#include "runtime/reachability.h"
#include "runtime/workload.h"
#include "scenario/loader.h"
#include "util/files.h"
#include "util/units.h"

namespace fabemu::cli {
namespace {

using Clock = std::chrono::steady_clock;

// "5.1 s", or in a dilated lab "1.27ms of the real fabric (5.1 s of wall clock)".
std::string duration_text(const LabModel& m, double wall_s) {
  char wall[32];
  std::snprintf(wall, sizeof wall, "%.1f s", wall_s);
  if (!m.time_scale.dilated()) return wall;
  return format_time_short(static_cast<uint64_t>(m.time_scale.real_s(wall_s) * 1e9)) +
         " of the real fabric (" + wall + " of wall clock)";
}

// The flows' order at their last hop, the balancers' path changes and TCP's reaction.
void print_order(const StepOrder& o) {
  auto pct = [](uint64_t part, uint64_t of) { return of ? 100.0 * part / of : 0.0; };
  std::printf("  order: %llu of %llu frames out of order (%.2f%%) in %llu of %llu flows",
              static_cast<unsigned long long>(o.reordered),
              static_cast<unsigned long long>(o.frames), pct(o.reordered, o.frames),
              static_cast<unsigned long long>(o.flows_reordered),
              static_cast<unsigned long long>(o.flows));
  if (!o.worst.empty())
    std::printf(", worst %s (%.2f%%)", o.worst[0].flow.c_str(),
                pct(o.worst[0].reordered, o.worst[0].frames));
  std::printf("; %llu path changes", static_cast<unsigned long long>(o.moves));
  if (o.down_skips || o.no_member)
    std::printf(", %llu frames around a down member, %llu with every member down",
                static_cast<unsigned long long>(o.down_skips),
                static_cast<unsigned long long>(o.no_member));
  std::printf("\n");
  if (o.tcp.out_segs)
    std::printf(
        "  TCP: %llu of %llu segments retransmitted, %llu reorderings detected, %llu "
        "DSACKs\n",
        static_cast<unsigned long long>(o.tcp.retrans_segs),
        static_cast<unsigned long long>(o.tcp.out_segs),
        static_cast<unsigned long long>(o.tcp.reorder_seen),
        static_cast<unsigned long long>(o.tcp.dsacks));
}

// A replay's iterations against the model, the last one's passes and collectives.
void print_replay(const ReplayResult& r) {
  auto ms = [](double ns) { return format_time_short(static_cast<uint64_t>(std::max(0.0, ns))); };
  const double model = r.model ? r.model->iteration_ns : 0;
  for (size_t k = 0; k < r.iterations.size(); ++k) {
    const double t = r.iterations[k].iteration_ns;
    std::printf("  iteration %zu: iteration time: %s", k + 1, ms(t).c_str());
    if (model > 0) std::printf(" (model %s, ratio %.2f)", ms(model).c_str(), t / model);
    std::printf("\n");
  }
  if (!r.model_error.empty()) std::printf("  model: %s\n", r.model_error.c_str());
  if (r.iterations.empty()) return;
  const replay::IterationSummary& last = r.iterations.back();
  std::printf("  last iteration, %s\n", replay::describe_iteration(last).c_str());
  std::printf("    %-44s %5s %12s %12s %12s\n", "COLLECTIVE", "COUNT", "TIME", "BUSBW", "MODEL");
  for (size_t i = 0; i < last.collectives.size(); ++i) {
    const replay::CollectiveFigure& c = last.collectives[i];
    std::string predicted = "-";
    if (r.model && i < r.model->collectives.size())
      predicted = format_rate_short(r.model->collectives[i].busbw_Bps * 8);
    std::printf("    %-44s %5d %12s %12s %12s\n", c.what.c_str(), c.count,
                format_time_short(static_cast<uint64_t>(c.time_ns)).c_str(),
                format_rate_short(c.busbw_Bps * 8).c_str(), predicted.c_str());
  }
  std::printf("  checked: %llu elements of every collective in the warm-up iteration, %llu wrong\n",
              static_cast<unsigned long long>(r.checked), static_cast<unsigned long long>(r.wrong));
}

}  // namespace

void print_step(const LabModel& m, const StepReport& s) {
  if (s.replay) print_replay(*s.replay);
  if (s.ok) {
    std::printf("%s: ok in %s\n", s.title.c_str(), duration_text(m, s.wall_seconds).c_str());
    if (!s.note.empty()) std::printf("  note: %s\n", s.note.c_str());
    // How evenly the ECMP groups carried this step: the worst group (busiest member over the
    // mean) and the mean of the groups' Jain indexes, over the groups that carried anything.
    const GroupBalance* worst = nullptr;
    double jain = 0;
    int carried = 0;
    for (const GroupBalance& g : s.groups) {
      if (!g.bytes) continue;
      ++carried;
      jain += g.jain;
      if (!worst || g.max_over_mean > worst->max_over_mean) worst = &g;
    }
    if (worst)
      std::printf(
          "  ECMP groups: worst %s, busiest member %.2f x the mean; mean Jain %.3f over %d "
          "groups\n",
          worst->name.c_str(), worst->max_over_mean, jain / carried, carried);
    if (s.order) print_order(*s.order);
  } else {
    std::printf("%s: FAILED after %s: %s\n", s.title.c_str(),
                duration_text(m, s.wall_seconds).c_str(), s.failure.c_str());
  }
}

namespace {

void print_faults(const LabModel& m, const RunReport& r) {
  if (r.faults.empty()) return;
  const bool dilated = m.time_scale.dilated();
  std::printf("faults (%s after the workload started):\n",
              dilated ? "real fabric's time, wall clock in brackets" : "seconds");
  auto when = [&](double real_s, double wall_s) {
    if (!dilated) return printf_string("%7.3f", real_s);
    return format_time_short(static_cast<uint64_t>(real_s * 1e9)) +
           printf_string(" (%.2f s)", wall_s);
  };
  for (const AppliedFault& f : r.faults) {
    if (f.done)
      std::printf("  %9s  %-40s %s (due %s)\n", when(f.applied_s, f.applied_wall_s).c_str(),
                  f.step.what.c_str(), f.detail.c_str(), when(f.due_s, f.due_wall_s).c_str());
    else
      std::printf("  %9s  %-40s %s (due %s)\n", "-", f.step.what.c_str(),
                  f.error.empty() ? "not played: the workload ended first" : f.error.c_str(),
                  when(f.due_s, f.due_wall_s).c_str());
  }
}

// The directions that dropped most, and the busiest, over the workload.
void print_links(const LabModel& m, const RunReport& r) {
  const std::vector<DirectionFigures> ranked = rank_directions(m, r);
  if (ranked.empty()) return;
  const double secs = std::max(1e-3, run_seconds(r));
  std::printf(
      "links over the workload (%s), busiest and dropping first:\n",
      m.time_scale.dilated()
          ? (format_time_short(static_cast<uint64_t>(secs * 1e9)) + " of the real fabric").c_str()
          : printf_string("%.1f s", secs).c_str());
  std::printf("  %-22s %12s %14s %10s %8s %10s\n", "DIRECTION", "MBYTES", "RATE", "DROPS", "CE",
              "QDELAY99");
  for (size_t k = 0; k < std::min<size_t>(6, ranked.size()); ++k) {
    const DirectionSample& g = ranked[k].growth;
    const std::string qd =
        g.shaped && g.queue_delay_p99_ns ? "<" + format_time_short(g.queue_delay_p99_ns) : "-";
    std::printf("  %-22s %12.2f %14s %10llu %8llu %10s\n", ranked[k].name.c_str(),
                double(g.bytes) / 1e6, format_rate_short(ranked[k].rate_bps).c_str(),
                static_cast<unsigned long long>(g.drops),
                static_cast<unsigned long long>(g.ce_marks), qd.c_str());
  }
  // PFC: where the lossless class was held back, longest first (the pause spreading upstream).
  std::vector<const DirectionFigures*> paused;
  uint64_t lossless_drops = 0;
  for (const DirectionFigures& f : ranked) {
    if (f.growth.pause_ns) paused.push_back(&f);
    lossless_drops += f.growth.lossless_drops;
  }
  if (paused.empty()) return;
  std::stable_sort(paused.begin(), paused.end(), [](const auto* x, const auto* y) {
    return x->growth.pause_ns > y->growth.pause_ns;
  });
  std::printf(
      "PFC pauses of the lossless class, longest first (frames of the class dropped where "
      "PFC applies: %llu):\n  %-22s %12s %8s %8s\n",
      static_cast<unsigned long long>(lossless_drops), "DIRECTION", "PAUSED", "OF RUN", "XOFF");
  for (size_t k = 0; k < std::min<size_t>(8, paused.size()); ++k) {
    const DirectionSample& g = paused[k]->growth;
    std::printf("  %-22s %12s %7.1f%% %8llu\n", paused[k]->name.c_str(),
                format_time_short(g.pause_ns).c_str(),
                secs > 0 ? 100.0 * double(g.pause_ns) / (secs * 1e9) : 0.0,
                static_cast<unsigned long long>(g.pause_events));
  }
}

// The busiest ECMP groups over the workload: each member's share of the group's bytes, the
// imbalance (collisions of a few big flows show here).
void print_groups(const LabModel& m, const RunReport& r) {
  const std::vector<GroupBalance> groups = run_group_balances(m, r);
  if (groups.empty() || groups.front().bytes == 0) return;
  std::printf("ECMP groups over the workload, busiest first (max/mean 1 and Jain 1: even):\n");
  std::printf("  %-12s %6s %10s %9s %6s  %s\n", "SWITCH", "ROUTES", "MBYTES", "MAX/MEAN", "JAIN",
              "NEXT HOP MBYTES");
  for (size_t k = 0; k < std::min<size_t>(6, groups.size()) && groups[k].bytes; ++k) {
    const GroupBalance& g = groups[k];
    std::string members;
    for (const MemberLoad& x : g.members) {
      const Link& l = m.topo.links[x.dir / 2];
      members += printf_string("%s%s %.2f", members.empty() ? "" : ", ",
                               m.topo.nodes[(x.dir % 2 ? l.a : l.b).node].name.c_str(),
                               double(x.bytes) / 1e6);
    }
    std::printf("  %-12s %6d %10.2f %9.2f %6.3f  %s\n", m.topo.nodes[g.node].name.c_str(), g.routes,
                double(g.bytes) / 1e6, g.max_over_mean, g.jain, members.c_str());
  }
  if (groups.size() > 6) std::printf("  (%zu groups in all: report.jsonl)\n", groups.size());
}

}  // namespace

void print_reachability(const LabModel& m, const ReachabilityReport& reach, double seconds) {
  // Round trips of the real fabric: the wall clock's over the time scale (the hosts' own
  // stack time shrinks with it, as an offloading NIC's would).
  auto rtt = [&](double p) {
    return format_time_short(
        static_cast<uint64_t>(m.time_scale.real_ns(reach.rtt_percentile(p) * 1e3)));
  };
  std::printf(
      "reachability: %d/%zu host pairs answered ICMP echo across the fabric in %.2f s; "
      "rtt p50 %s, p99 %s\n",
      reach.answered(), reach.pairs.size(), seconds, rtt(50).c_str(), rtt(99).c_str());
  int shown = 0;
  for (const auto& pr : reach.pairs)
    if (!pr.answered && shown++ < 10)
      std::printf("  no answer: %s -> %s\n", m.topo.nodes[pr.src].name.c_str(),
                  m.topo.nodes[pr.dst].name.c_str());
}

namespace {

// The run as it happens: the lab, the reachability check, each step. ^C and TERM are the
// guard's while the lab is built (what was made goes again); once it is up they end fabemu as
// before (`fabemu down` removes the lab), a signal that came meanwhile raised again.
class RunObserver : public TerminalObserver {
 public:
  explicit RunObserver(const UpArgs& args) : TerminalObserver(args.quiet), args_(args) {}
  std::optional<session::InterruptGuard> guard;
  void lab_up(const session::UpOutcome& up) override {
    const int sig = session::InterruptGuard::signal().load();
    guard.reset();
    if (sig) ::raise(sig);
    UpArgs shown = args_;
    shown.json = false;  // --json of run: the run's object at the end
    render_up(up, shown);
    std::fflush(stdout);
  }
  void reachability(const LabModel& m, const ReachabilityReport& reach, double seconds) override {
    print_reachability(m, reach, seconds);
    std::fflush(stdout);  // before the steps' programs write to the same stdout
  }

 private:
  const UpArgs& args_;
};

// After the workload: notes, faults, links, expectations, the report, the lab down; the exit code.
int render_run_end(const session::RunOutcome& out, const UpArgs& args) {
  const LabModel& m = out.up.up.model;
  const RunReport& report = out.report;
  for (const std::string& n : report.notes) std::printf("  note: %s\n", n.c_str());
  if (!out.workload_not_run.empty())
    std::printf("workload not run: %s\n", out.workload_not_run.c_str());
  print_faults(m, report);
  print_links(m, report);
  print_groups(m, report);
  for (const ExpectResult& e : report.expectations)
    std::printf("expect %s: %s\n", e.ok ? "ok" : "FAILED", e.what.c_str());
  if (out.report_error)
    print_error(out.report_error->what());
  else
    std::printf("report: %s/report.html (JSON lines: %s/report.jsonl)\n", out.report_dir.c_str(),
                out.report_dir.c_str());
  const std::string on = args.on.empty() ? "" : " --on " + args.on;
  if (out.kept)
    std::printf("lab %s left up (--keep); `fabemu down %s%s` removes it\n", out.up.lab.c_str(),
                out.up.lab.c_str(), on.c_str());
  if (out.down_error) return report_error(*out.down_error);
  if (out.down)
    if (const int down = render_down(*out.down, false); down != kExitOk) return down;
  return out.ok ? kExitOk : kExitFailed;
}

}  // namespace

namespace {

// A run's replay: its mean iteration time and the model's, in ns; none without a replay.
struct ReplayFigures {
  double measured = 0, model = 0;
  std::string scenario;
};
std::optional<ReplayFigures> replay_figures(const session::RunOutcome& out,
                                            const std::string& scenario) {
  for (const StepReport& s : out.report.steps) {
    if (!s.replay || s.replay->iterations.empty()) continue;
    ReplayFigures f;
    f.scenario = scenario;
    for (const auto& it : s.replay->iterations) f.measured += it.iteration_ns;
    f.measured /= static_cast<double>(s.replay->iterations.size());
    f.model = s.replay->model ? s.replay->model->iteration_ns : 0;
    return f;
  }
  return std::nullopt;
}

// Now, as JUnit's timestamps want it: ISO 8601 in UTC, no zone.
std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  return stamp;
}

// One run as `run` shows it: the observer's lines while the lab is built and the workload
// runs (^C and SIGTERM caught meanwhile), then the summary; its exit status beside it.
struct RenderedRun {
  session::RunOutcome outcome;
  int code = kExitOk;
  std::string timestamp;  // when it began (UTC)
  double wall_seconds = 0;
};
Result<RenderedRun> run_rendered(const UpArgs& a, const RunArgs& r, const LabPaths& base) {
  RunObserver observer(a);
  observer.guard.emplace();
  const std::string began = utc_timestamp();
  const auto start = std::chrono::steady_clock::now();
  auto out =
      session::run({a, r.report_dir, r.keep}, base, observer, &session::InterruptGuard::signal());
  if (!out) return out.error();
  const int code = render_run_end(*out, a);
  return RenderedRun{
      std::move(*out), code, began,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// --junit: the runs as JUnit XML; a run whose lab never came up as one error.
JunitRun junit_run(const RenderedRun& r) {
  const session::RunOutcome& o = r.outcome;
  JunitRun j{o.report, r.timestamp, r.wall_seconds, o.up.up.model.time_scale.factor,
             o.workload_not_run};
  if (o.report_error) j.report_error = o.report_error->what();
  if (o.down_error) j.down_error = o.down_error->what();
  j.report_dir = o.report_dir;
  return j;
}
int write_junit(const std::string& file, const std::vector<JunitRun>& runs) {
  if (auto w = write_file(file, junit_xml(runs)); !w) return report_error(w.error());
  std::printf("junit: %s\n", file.c_str());
  return kExitOk;
}
int write_junit_failure(const std::string& file, const UpArgs& a, const Error& e) {
  RunReport failed;
  failed.lab = a.lab.empty() ? "lab" : a.lab;
  failed.scenario_file = a.scenario;
  JunitRun j{failed, utc_timestamp()};
  j.up_error = e.what();
  return write_junit(file, {j});
}

// --compare: each variant's iteration time against the first scenario's, and whether the
// model moved the same way.
void print_comparison(const std::vector<std::optional<ReplayFigures>>& runs) {
  if (runs.empty() || !runs.front()) {
    std::printf("compare: the first run has no replayed iteration to compare with\n");
    return;
  }
  const ReplayFigures& base = *runs.front();
  auto ms = [](double ns) { return format_time_short(static_cast<uint64_t>(ns)); };
  int width = 40;  // the scenarios' names, in one column
  for (const auto& r : runs)
    if (r) width = std::max(width, static_cast<int>(r->scenario.size()));
  std::printf("compare (mean iteration time, real fabric):\n  %-*s %10s (model %s)\n", width,
              base.scenario.c_str(), ms(base.measured).c_str(), ms(base.model).c_str());
  for (size_t i = 1; i < runs.size(); ++i) {
    if (!runs[i]) {
      std::printf("  variant %zu: no replayed iteration\n", i);
      continue;
    }
    const ReplayFigures& v = *runs[i];
    const double delta = (v.measured / base.measured - 1) * 100;
    const double model_delta = base.model > 0 ? (v.model / base.model - 1) * 100 : 0;
    // Under 0.5% the model sees no difference (the variant changed what this step does not
    // use), and a measured delta is noise to it.
    const char* verdict = std::abs(model_delta) < 0.5          ? "the model sees no difference"
                          : (delta >= 0) == (model_delta >= 0) ? "the same direction"
                                                               : "the opposite direction";
    std::printf("  %-*s %10s (model %s): %+.1f%% against the first, model %+.1f%%: %s\n", width,
                v.scenario.c_str(), ms(v.measured).c_str(), ms(v.model).c_str(), delta, model_delta,
                verdict);
  }
}

}  // namespace

int cmd_run(const UpArgs& args, const RunArgs& run, const LabPaths& base) {
  // Before anything is built: a report that could not be written would be a run wasted.
  if (const auto dir = std::filesystem::path(run.junit).parent_path();
      !run.junit.empty() && !dir.empty() && !std::filesystem::is_directory(dir))
    return report_error(
        session::with_failure(make_error("--junit " + run.junit + ": no directory " + dir.string()),
                              session::Failure::BadInput));
  if (!run.compare.empty()) {
    std::vector<std::optional<ReplayFigures>> runs;
    std::vector<RenderedRun> rendered;  // kept for --junit
    int worst = kExitOk;
    std::vector<std::string> scenarios = {args.scenario};
    scenarios.insert(scenarios.end(), run.compare.begin(), run.compare.end());
    for (const std::string& scenario : scenarios) {
      UpArgs a = args;
      a.scenario = scenario;
      RunArgs r = run;
      r.compare.clear();
      r.report_dir.clear();  // each run its own
      auto out = run_rendered(a, r, base);
      if (!out && !run.junit.empty()) write_junit_failure(run.junit, a, out.error());
      if (!out) return report_error(out.error());
      worst = std::max(worst, out->code);
      runs.push_back(replay_figures(out->outcome, scenario));
      if (!run.junit.empty()) rendered.push_back(std::move(*out));
      // ^C or SIGTERM ends the comparison, not just the run it came in.
      if (const int sig = session::InterruptGuard::signal().load())
        return session::interrupted_exit_code(sig);
    }
    print_comparison(runs);
    if (!run.junit.empty()) {
      std::vector<JunitRun> suites;
      for (const RenderedRun& r : rendered) suites.push_back(junit_run(r));
      if (const int w = write_junit(run.junit, suites); w != kExitOk) return w;
    }
    return worst;
  }
  std::optional<StdoutToStderr> text_to_stderr;
  if (run.json) text_to_stderr.emplace();
  auto out = run_rendered(args, run, base);
  if (!out && !run.junit.empty()) write_junit_failure(run.junit, args, out.error());
  if (!out) return report_error(out.error());
  if (!run.junit.empty())
    if (const int w = write_junit(run.junit, {junit_run(*out)}); w != kExitOk) return w;
  if (text_to_stderr) {
    text_to_stderr->restore();
    print_json(out->outcome.to_json());
  }
  return out->code;
}

void add_run_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    UpArgs up;
    RunArgs run;
    bool vm = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "run",
      "Build the fabric, check it, run the workload while the fault timeline plays, report "
      "(terminal, JSON lines, HTML), check the scenario's expectations, tear down");
  add_build_options(cmd, a->up);
  cmd->add_flag("--keep", a->run.keep, "Leave the lab up afterwards");
  cmd->add_option("--report", a->run.report_dir,
                  "Directory for report.html, report.jsonl and topology.svg (default: "
                  "fabemu-reports/LAB-DATE-TIME)");
  cmd->add_flag("--vm", a->vm, std::string(kVmHelp) + "; the report comes back to this machine")
      ->excludes("--on")
      ->excludes("--keep");
  cmd->add_option("--replay", a->up.replay,
                  "Replay this training step as the workload (a SimAI workload file, or a "
                  "Chakra trace's PREFIX of PREFIX.<rank>.et): docs/replay.md");
  cmd->add_option("--format", a->up.replay_format, "--replay's format: simai or chakra")
      ->capture_default_str()
      ->check(CLI::IsMember({"simai", "chakra"}));
  cmd->add_option("--comm-groups", a->up.replay_groups,
                  "A Chakra --replay's process groups (ASTRA-sim's JSON, {\"1\": [0, 1], ...})");
  cmd->add_option("--compare", a->run.compare,
                  "Then the same run on this scenario (repeatable: several variants), and the "
                  "replay's iteration time against the first's")
      ->excludes("--keep");
  cmd->add_option("--junit", a->run.junit,
                  "Also write the run as a JUnit XML report here (reachability, each step and "
                  "each expectation a test case; docs/schema/junit.xsd)")
      ->excludes("--vm");
  cmd->add_flag("--json", a->run.json,
                "The result as one JSON object on stdout (docs/json.md): the report's records "
                "but the telemetry samples; the run's text goes to stderr")
      ->excludes("--vm");
  cmd->callback([a, &cl] {
    if (a->vm) {
      std::string lab = a->up.lab;
      if (lab.empty()) {
        auto s = load_scenario_file(a->up.scenario);
        if (!s) {
          print_error(s.error().what());
          cl.exit = kExitBadInput;
          return;
        }
        lab = s->name;
      }
      cl.exit =
          cmd_in_vm(cl.without("--vm"), a->run.report_dir.empty() ? session::default_report_dir(lab)
                                                                  : a->run.report_dir);
      return;
    }
    cl.exit = cmd_run(a->up, a->run, cl.base);
  });
}

}  // namespace fabemu::cli
