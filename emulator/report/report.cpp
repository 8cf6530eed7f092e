// Run report data: the benchmark's results read back, expectations checked, JSON lines.
#include "report/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "results/ecmp_groups.h"
#include "util/json.h"
#include "util/units.h"

namespace fabemu {

DirectionSample growth(const TelemetrySample& from, const TelemetrySample& to, size_t d) {
  DirectionSample g = to.dirs.at(d);
  if (d >= from.dirs.size()) return g;
  const DirectionSample& a = from.dirs[d];
  auto since = [](uint64_t now, uint64_t then) { return now >= then ? now - then : 0; };
  g.bytes = since(g.bytes, a.bytes);
  g.packets = since(g.packets, a.packets);
  g.drops = since(g.drops, a.drops);
  g.drop_down = since(g.drop_down, a.drop_down);
  g.drop_loss = since(g.drop_loss, a.drop_loss);
  g.drop_queue = since(g.drop_queue, a.drop_queue);
  g.drop_watchdog = since(g.drop_watchdog, a.drop_watchdog);
  g.ce_marks = since(g.ce_marks, a.ce_marks);
  g.pause_ns = since(g.pause_ns, a.pause_ns);
  g.pause_events = since(g.pause_events, a.pause_events);
  g.lossless_drops = since(g.lossless_drops, a.lossless_drops);
  return g;
}

DirectionSample run_growth(const RunReport& r, size_t d) {
  if (r.samples.size() < 2) return {};
  return growth(r.samples.front(), r.samples.back(), d);
}

double run_seconds(const RunReport& r) {
  return r.samples.size() < 2 ? 0 : r.samples.back().t_s - r.samples.front().t_s;
}

uint64_t run_drops(const RunReport& r) {
  if (r.samples.size() < 2) return 0;
  uint64_t total = 0;
  for (size_t d = 0; d < r.samples.back().dirs.size(); ++d)
    if (const DirectionSample g = run_growth(r, d); g.shaped) total += g.drops;
  return total;
}

std::vector<ExpectResult> check_expectations(const Expectations& e, const RunReport& r) {
  std::vector<ExpectResult> out;
  if (e.completes) {
    bool all = r.reachable == r.pairs && r.pairs > 0;
    std::string failed;
    if (!r.not_run.empty()) {  // no step failed: none ran
      all = false;
      failed = "the workload did not run: " + r.not_run;
    }
    for (const auto& s : r.steps)
      if (!s.ok) {
        all = false;
        failed += (failed.empty() ? "" : ", ") + s.title;
      }
    const bool ok = all == *e.completes;
    out.push_back(
        {std::string("completes: ") + (*e.completes ? "true" : "false") + " (" +
             (failed.empty() ? (r.reachable == r.pairs ? "every step ok" : "reachability failed")
                             : "failed: " + failed) +
             ")",
         ok});
  }
  if (e.busbw_min_bps) {
    const double want = double(*e.busbw_min_bps) / 8 / 1e9;  // GB/s
    for (const auto& s : r.steps) {
      if (s.collective.empty()) continue;
      if (s.results.empty()) {
        out.push_back(
            {"busbw_min " + format_rate(*e.busbw_min_bps) + ": " + s.title + " has no results",
             false});
        continue;
      }
      const SizeResult& big = *std::max_element(
          s.results.begin(), s.results.end(),
          [](const SizeResult& a, const SizeResult& b) { return a.size < b.size; });
      char buf[160];
      std::snprintf(buf, sizeof buf, "%.4f GB/s at %s (needed %.4f)", big.busbw_gbps,
                    format_size(big.size).c_str(), want);
      out.push_back({"busbw_min " + format_rate(*e.busbw_min_bps) + ": " + s.title + " " + buf,
                     big.busbw_gbps >= want});
    }
  }
  if (e.max_drops) {
    const uint64_t drops = run_drops(r);
    out.push_back({"max_drops " + std::to_string(*e.max_drops) + ": the link model dropped " +
                       std::to_string(drops) + " frames",
                   drops <= *e.max_drops});
  }
  // The fault timeline: a step not played (the workload ended first, or it failed) fails the
  // run unless the scenario accepts it; a run that says nothing of it expects every step.
  if (!r.faults.empty()) {
    using F = Expectations::FaultsPlayed;
    const F want = e.faults_played.value_or(F::All);
    size_t played = 0;
    const AppliedFault* missed = nullptr;
    for (const AppliedFault& f : r.faults) {
      played += f.done;
      if (!f.done && !missed) missed = &f;
    }
    std::string what = std::string("faults_played: ") + (want == F::All ? "all" : "any") +
                       (e.faults_played ? "" : " (the default with a fault timeline)") + " (" +
                       std::to_string(played) + " of " + std::to_string(r.faults.size()) +
                       " steps played";
    if (missed) {
      what += "; first not played: " + missed->step.what + " due " +
              format_time_short(static_cast<uint64_t>(missed->due_s * 1e9));
      if (missed->due_wall_s != missed->due_s)
        what += printf_string(" = %.1f s of wall clock", missed->due_wall_s);
      what += ": " + (missed->error.empty() ? "the workload ended first" : missed->error);
      if (want == F::All) what += "; `expect: {faults_played: any}` accepts a longer timeline";
    }
    out.push_back({what + ")", want == F::Any || !missed});
  }
  return out;
}

namespace {

Json or_null(bool has, double v) {
  return has ? Json(v) : Json(nullptr);
}

// A replay's records: what ran where, each timed iteration against the model, and the first
// timed iteration's timeline of every rank.
void replay_records(size_t i, const ReplayResult& r, std::vector<Json>& out) {
  const replay::Program& p = *r.program;
  const bool model = r.model.has_value();
  const double model_s = model ? r.model->iteration_ns * 1e-9 : 0;
  out.push_back({{"type", "replay"},
                 {"step", i},
                 {"format", p.format},
                 {"source", p.source},
                 {"program", p.describe()},
                 {"ranks", p.world},
                 {"placement", r.placement},
                 {"time_scale", r.time_scale},
                 {"checked", r.checked},
                 {"wrong", r.wrong},
                 {"model_iteration_s", or_null(model, model_s)},
                 {"model_error", r.model_error}});
  auto passes = [](const std::map<std::string, double>& ns) {
    Json j = Json::object();
    for (const auto& [pass, v] : ns) j[pass] = v * 1e-9;
    return j;
  };
  for (size_t k = 0; k < r.iterations.size(); ++k) {
    const replay::IterationSummary& it = r.iterations[k];
    Json layers = Json::array(), collectives = Json::array();
    for (const auto& [name, ns] : it.layer_ns)
      layers.push_back({{"name", name}, {"passes", passes(ns)}});
    for (size_t c = 0; c < it.collectives.size(); ++c) {
      const replay::CollectiveFigure& f = it.collectives[c];
      const bool m = model && c < r.model->collectives.size();
      collectives.push_back(
          {{"what", f.what},
           {"count", f.count},
           {"time_s", f.time_ns * 1e-9},
           {"busbw_gbps", f.busbw_Bps * 8e-9},
           {"model_time_s", or_null(m, m ? r.model->collectives[c].time_ns * 1e-9 : 0)},
           {"model_busbw_gbps", or_null(m, m ? r.model->collectives[c].busbw_Bps * 8e-9 : 0)}});
    }
    const double t = it.iteration_ns * 1e-9;
    out.push_back({{"type", "replay_iteration"},
                   {"step", i},
                   {"iteration", k + 1},
                   {"time_s", t},
                   {"model_s", or_null(model, model_s)},
                   {"ratio", or_null(model && model_s > 0, model_s > 0 ? t / model_s : 0)},
                   {"slowest_rank", it.slowest_rank},
                   {"compute_s", it.compute_ns * 1e-9},
                   {"exposed_comm_s", it.exposed_comm_ns * 1e-9},
                   {"passes", passes(it.pass_ns)},
                   {"layers", layers},
                   {"collectives", collectives}});
  }
  for (size_t rank = 0; rank < r.first.size(); ++rank) {
    Json ops = Json::array();
    for (size_t k = 0; k < r.first[rank].size(); ++k) {
      const replay::Op& op = p.ranks[rank][k];
      ops.push_back({{"what", replay::describe_op(p, op)},
                     {"layer", op.layer},
                     {"pass", replay::name_of(op.pass)},
                     {"start_s", r.first[rank][k].start_ns * 1e-9},
                     {"end_s", r.first[rank][k].end_ns * 1e-9}});
    }
    out.push_back({{"type", "replay_timeline"},
                   {"step", i},
                   {"rank", rank},
                   {"host", rank < r.placement.size() ? r.placement[rank] : ""},
                   {"ops", ops}});
  }
}

// Step `i`'s record, then one per collective size it measured and per flow it ran.
void step_records(size_t i, const StepReport& s, std::vector<Json>& out) {
  auto line = [&](Json j) { out.push_back(std::move(j)); };
  line({{"type", "step"},
        {"index", i},
        {"title", s.title},
        {"ok", s.ok},
        {"failure", s.failure},
        {"start_s", s.start_s},
        {"seconds", s.seconds},
        {"wall_start_s", s.wall_start_s},
        {"wall_seconds", s.wall_seconds},
        {"library", s.library},
        {"transport", s.transport},
        {"note", s.note},
        {"receiver_bps", or_null(s.receiver_bps.has_value(), s.receiver_bps.value_or(0))}});
  if (s.replay) replay_records(i, *s.replay, out);
  for (const SizeResult& res : s.results)
    line({{"type", "result"},
          {"step", i},
          {"collective", s.collective},
          {"size", res.size},
          {"time_us", res.time_us},
          {"wall_time_us", res.wall_time_us},
          {"busbw_gbps", res.busbw_gbps},
          {"wrong", res.wrong},
          {"pred_busbw_gbps", or_null(res.pred_busbw_gbps >= 0, res.pred_busbw_gbps)},
          {"rank_time_us", res.rank_time_us},
          {"iteration_time_us", res.iteration_time_us},
          {"library", res.library},
          {"transport", res.transport},
          {"ranks", res.ranks},
          {"time_scale", res.time_scale}});
  for (const FlowResult& f : s.flows)
    line({{"type", "flow"},
          {"step", i},
          {"role", f.role},
          {"from", f.from},
          {"to", f.to},
          {"bps", f.bps},
          {"fair_bps", or_null(f.fair_bps > 0, f.fair_bps)},
          {"lost", or_null(f.lost >= 0, f.lost)},
          {"retransmits", f.retransmits},
          {"stalled_s", f.stalled_s},
          {"cnps", f.cnps >= 0 ? Json(f.cnps) : Json(nullptr)},
          {"failure", f.failure}});
}

// A telemetry sample: each direction's counters when read, each host's rxe counters.
Json sample_record(const Topology& t, const TelemetrySample& s) {
  Json dirs = Json::array();
  for (size_t d = 0; d < s.dirs.size(); ++d) {
    const DirectionSample& x = s.dirs[d];
    dirs.push_back({{"name", direction_name(t, static_cast<int>(d / 2), d % 2 == 1)},
                    {"bytes", x.bytes},
                    {"packets", x.packets},
                    {"drops", x.drops},
                    {"ce_marks", x.ce_marks},
                    {"pause_ns", x.pause_ns},
                    {"pause_events", x.pause_events},
                    {"lossless_drops", x.lossless_drops},
                    {"queue_delay_p99_ns", x.queue_delay_p99_ns},
                    {"shaped", x.shaped},
                    // When it was read; what its queue held then (not in `bytes`); drops by
                    // cause.
                    {"t_s", read_time(s, d)},
                    {"queued_bytes", x.queued_bytes},
                    {"drop_down", x.drop_down},
                    {"drop_loss", x.drop_loss},
                    {"drop_queue", x.drop_queue},
                    {"drop_watchdog", x.drop_watchdog}});
  }
  Json j = {{"type", "sample"}, {"t_s", s.t_s}, {"wall_s", s.wall_s}, {"directions", dirs}};
  if (!s.rxe.empty()) j["rxe"] = s.rxe;
  if (!s.qps.empty()) {
    Json qps = Json::array();
    for (const QpSample& q : s.qps)
      qps.push_back({{"host", q.host},
                     {"peer", q.peer},
                     {"qpn", q.qpn},
                     {"rate_bps", q.rate_bps},
                     {"cnps", q.cnps}});
    j["qps"] = qps;
  }
  if (!s.buffers.empty()) j["buffers"] = s.buffers;
  return j;
}

}  // namespace

std::vector<GroupBalance> run_group_balances(const LabModel& m, const RunReport& r) {
  if (r.samples.size() < 2) return {};
  return group_balances(m, [&](size_t d) { return run_growth(r, d); });
}

std::vector<Json> report_records(const LabModel& m, const RunReport& r) {
  const Topology& t = m.topo;
  std::vector<Json> out;
  auto line = [&](Json j) { out.push_back(std::move(j)); };
  // The link model's mode as `status --json` names it; delay_added false: the scenario's delays
  // and jitter were not applied (no fq), so every time measured lacks them.
  Json mode = nullptr;
  if (r.link_mode)
    mode = {{"mode", shaping_mode_name(*r.link_mode)},
            {"reason", r.link_mode->no_fq_reason},
            {"delay_added", r.link_mode->fq},
            {"note", link_mode_note(m, r)}};
  // How far a sampled rate can run ahead of the link (sampler_bound).
  const SamplerBound bound = sampler_bound(m, r);
  // Times and rates are the real fabric's; wall_* are the lab's wall clock (time_scale times
  // longer when dilated).
  line({{"type", "run"},
        {"lab", r.lab},
        {"scenario", r.scenario_file},
        {"seed", r.seed},
        {"time_scale", m.time_scale.factor},
        {"time_scale_why", m.time_scale_why},
        {"hosts", t.host_count()},
        {"switches", t.switches().size()},
        {"links", t.links.size()},
        {"reachable_pairs", r.reachable},
        {"pairs", r.pairs},
        {"link_model", mode},
        {"sampler",
         {{"slack_bytes", bound.slack_bytes},
          {"shortest_interval_s", bound.shortest_interval_s},
          {"error_bps", bound.bps}}}});
  for (size_t i = 0; i < r.steps.size(); ++i) step_records(i, r.steps[i], out);
  for (const AppliedFault& f : r.faults)
    line({{"type", "fault"},
          {"what", f.step.what},
          {"target", f.step.target},
          {"due_s", f.due_s},
          {"applied_s", or_null(f.done, f.applied_s)},
          {"wall_due_s", f.due_wall_s},
          {"wall_applied_s", or_null(f.done, f.applied_wall_s)},
          {"done", f.done},
          {"detail", f.detail},
          {"error", f.error},
          // routing: bgp: when the routers' FIBs changed after it (real seconds).
          {"fib_switches", f.fib_switches},
          {"fib_first_s", or_null(f.fib_first_s.has_value(), f.fib_first_s.value_or(0))},
          {"fib_last_s", or_null(f.fib_last_s.has_value(), f.fib_last_s.value_or(0))}});
  for (const GroupBalance& g : run_group_balances(m, r)) {
    Json j = {{"type", "ecmp_group"}};
    j.update(group_json(t, g));
    line(std::move(j));
  }
  constexpr size_t kStepGroups = 8;  // the busiest of each step: a big lab has thousands
  for (size_t i = 0; i < r.steps.size(); ++i)
    for (size_t k = 0; k < r.steps[i].groups.size() && k < kStepGroups; ++k) {
      Json j = {{"type", "ecmp_group"}, {"step", i}};
      j.update(group_json(t, r.steps[i].groups[k]));
      line(std::move(j));
    }
  for (size_t i = 0; i < r.steps.size(); ++i)
    if (const auto& o = r.steps[i].order) {
      Json j = {{"type", "order"}, {"step", i}};
      j.update(order_json(*o));
      line(std::move(j));
    }
  for (const TelemetrySample& s : r.samples) line(sample_record(t, s));
  for (const ExpectResult& e : r.expectations)
    line({{"type", "expect"}, {"what", e.what}, {"ok", e.ok}});
  return out;
}

std::string report_json_lines(const LabModel& m, const RunReport& r) {
  std::string out;
  for (const Json& j : report_records(m, r)) out += json_text(j) + "\n";
  return out;
}

}  // namespace fabemu
