// Machines' shares of a run as JSON, and the merge into one report.
#include "report/run_part.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "util/json.h"

namespace fabemu {
namespace {

Error not_a_part(const std::string& what, const std::string& why) {
  return make_error(what + ": not a run part (" + why + ")", EINVAL);
}

// "rerouted: 12 route changes on 4 switches": the counts, when a detail is one.
bool reroute_counts(const std::string& detail, int& changes, int& switches) {
  return std::sscanf(detail.c_str(), "rerouted: %d route changes on %d switches", &changes,
                     &switches) == 2;
}

}  // namespace

std::string run_part_text(const RunReport& part) {
  Json steps = Json::array();
  for (const StepReport& s : part.steps)
    steps.push_back({{"title", s.title},
                     {"ok", s.ok},
                     {"failure", s.failure},
                     {"start_s", s.start_s},
                     {"seconds", s.seconds},
                     {"wall_start_s", s.wall_start_s},
                     {"wall_seconds", s.wall_seconds},
                     {"collective", s.collective}});
  Json faults = Json::array();
  for (const AppliedFault& f : part.faults)
    faults.push_back({{"due_s", f.due_s},
                      {"applied_s", f.applied_s},
                      {"due_wall_s", f.due_wall_s},
                      {"applied_wall_s", f.applied_wall_s},
                      {"done", f.done},
                      {"error", f.error},
                      {"detail", f.detail}});
  Json samples = Json::array();
  for (const TelemetrySample& s : part.samples) {
    // Compact: [bytes, packets, drops, ce_marks, queue_delay_p99_ns, shaped, pause_ns,
    // pause_events, lossless_drops, queued_bytes, drop_down, drop_loss, drop_queue,
    // drop_watchdog, t_s] per direction.
    Json dirs = Json::array();
    for (const DirectionSample& d : s.dirs)
      dirs.push_back({d.bytes, d.packets, d.drops, d.ce_marks, d.queue_delay_p99_ns, d.shaped,
                      d.pause_ns, d.pause_events, d.lossless_drops, d.queued_bytes, d.drop_down,
                      d.drop_loss, d.drop_queue, d.drop_watchdog, d.t_s});
    Json qps = Json::array();
    for (const QpSample& q : s.qps) qps.push_back({q.host, q.peer, q.qpn, q.rate_bps, q.cnps});
    samples.push_back({{"t_s", s.t_s},
                       {"wall_s", s.wall_s},
                       {"dirs", dirs},
                       {"rxe", s.rxe},
                       {"qps", qps},
                       {"buffers", s.buffers}});
  }
  return json_text({{"steps", steps},
                    {"faults", faults},
                    {"samples", samples},
                    {"notes", part.notes},
                    {"link_mode", part.link_mode ? format_shaping_mode(*part.link_mode) : ""},
                    {"sample_slack_bytes", part.sample_slack_bytes}}) +
         "\n";
}

Result<RunReport> parse_run_part(const std::string& text, const std::string& what,
                                 const std::vector<FaultStep>& faults) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return not_a_part(what, "no JSON object");
  RunReport r;
  try {
    for (const Json& s : j.at("steps")) {
      StepReport step;
      step.title = s.at("title").get<std::string>();
      step.ok = s.at("ok").get<bool>();
      step.failure = s.at("failure").get<std::string>();
      step.start_s = s.at("start_s").get<double>();
      step.seconds = s.at("seconds").get<double>();
      step.wall_start_s = s.at("wall_start_s").get<double>();
      step.wall_seconds = s.at("wall_seconds").get<double>();
      step.collective = s.at("collective").get<std::string>();
      r.steps.push_back(std::move(step));
    }
    const Json& fj = j.at("faults");
    if (fj.size() != faults.size())
      return not_a_part(what, std::to_string(fj.size()) + " faults where the scenario has " +
                                  std::to_string(faults.size()));
    for (size_t i = 0; i < fj.size(); ++i) {
      AppliedFault f;
      f.step = faults[i];
      f.due_s = fj[i].at("due_s").get<double>();
      f.applied_s = fj[i].at("applied_s").get<double>();
      f.due_wall_s = fj[i].at("due_wall_s").get<double>();
      f.applied_wall_s = fj[i].at("applied_wall_s").get<double>();
      f.done = fj[i].at("done").get<bool>();
      f.error = fj[i].at("error").get<std::string>();
      f.detail = fj[i].at("detail").get<std::string>();
      r.faults.push_back(std::move(f));
    }
    for (const Json& s : j.at("samples")) {
      TelemetrySample t;
      t.t_s = s.at("t_s").get<double>();
      t.wall_s = s.at("wall_s").get<double>();
      for (const Json& d : s.at("dirs")) {
        DirectionSample ds;
        ds.bytes = d.at(0).get<uint64_t>();
        ds.packets = d.at(1).get<uint64_t>();
        ds.drops = d.at(2).get<uint64_t>();
        ds.ce_marks = d.at(3).get<uint64_t>();
        ds.queue_delay_p99_ns = d.at(4).get<uint64_t>();
        ds.shaped = d.at(5).get<bool>();
        ds.pause_ns = d.at(6).get<uint64_t>();
        ds.pause_events = d.at(7).get<uint64_t>();
        ds.lossless_drops = d.at(8).get<uint64_t>();
        if (d.size() >= 15) {
          ds.queued_bytes = d.at(9).get<uint64_t>();
          ds.drop_down = d.at(10).get<uint64_t>();
          ds.drop_loss = d.at(11).get<uint64_t>();
          ds.drop_queue = d.at(12).get<uint64_t>();
          ds.drop_watchdog = d.at(13).get<uint64_t>();
          ds.t_s = d.at(14).get<double>();
        }
        t.dirs.push_back(ds);
      }
      t.rxe = s.at("rxe").get<std::map<std::string, std::map<std::string, uint64_t>>>();
      if (s.contains("qps"))
        for (const Json& q : s.at("qps"))
          t.qps.push_back({q.at(0).get<std::string>(), q.at(1).get<std::string>(),
                           q.at(2).get<uint32_t>(), q.at(3).get<uint64_t>(),
                           q.at(4).get<uint64_t>()});
      if (s.contains("buffers")) t.buffers = s.at("buffers").get<std::map<std::string, uint64_t>>();
      r.samples.push_back(std::move(t));
    }
    r.notes = j.value("notes", std::vector<std::string>{});
    if (const std::string mode = j.value("link_mode", ""); !mode.empty())
      if (auto parsed = parse_shaping_mode(mode, what)) r.link_mode = *parsed;
    r.sample_slack_bytes = j.value("sample_slack_bytes", uint64_t{0});
  } catch (const Json::exception& e) {
    return not_a_part(what, e.what());
  }
  return r;
}

std::string pairs_text(const std::vector<PairResult>& pairs) {
  Json out = Json::array();
  for (const PairResult& p : pairs) out.push_back({p.src, p.dst, p.answered, p.rtt_us});
  return json_text({{"pairs", out}}) + "\n";
}

Result<std::vector<PairResult>> parse_pairs(const std::string& text, const std::string& what) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<PairResult> out;
  try {
    for (const Json& p : j.at("pairs"))
      out.push_back(
          {p.at(0).get<int>(), p.at(1).get<int>(), p.at(2).get<bool>(), p.at(3).get<double>()});
  } catch (const Json::exception& e) {
    return make_error(what + ": not a list of reachability pairs (" + e.what() + ")", EINVAL);
  }
  return out;
}

RunReport merge_run_parts(const LabModel& m, const std::vector<std::string>& machines,
                          const std::vector<RunReport>& parts) {
  RunReport out;
  if (parts.empty()) return out;
  const Topology& t = m.topo;
  const std::vector<int>& machine_of = m.part->placement.machine_of;

  // Steps: every machine ran the same list.
  size_t steps = parts[0].steps.size();
  for (const RunReport& p : parts) steps = std::min(steps, p.steps.size());
  for (size_t i = 0; i < steps; ++i) {
    StepReport s = parts[0].steps[i];
    s.ok = true;
    s.failure.clear();
    for (size_t k = 0; k < parts.size(); ++k) {
      const StepReport& o = parts[k].steps[i];
      s.start_s = std::min(s.start_s, o.start_s);
      s.wall_start_s = std::min(s.wall_start_s, o.wall_start_s);
      s.seconds = std::max(s.seconds, o.seconds);
      s.wall_seconds = std::max(s.wall_seconds, o.wall_seconds);
      if (!o.ok) {
        s.ok = false;
        s.failure += (s.failure.empty() ? "" : "; ") + machines[k] + ": " + o.failure;
      }
    }
    out.steps.push_back(std::move(s));
  }

  // Faults: the entry of the machine that owns the step; reroutes happen everywhere.
  for (size_t i = 0; i < parts[0].faults.size(); ++i) {
    AppliedFault f = parts[0].faults[i];
    int changes = 0, switches = 0;
    bool rerouted = false, owned = false;
    for (const RunReport& p : parts) {
      if (i >= p.faults.size()) continue;
      const AppliedFault& o = p.faults[i];
      if (!o.done && !o.error.empty()) {  // a failure anywhere is the fault's
        f = o;
        owned = true;
        break;
      }
      int c = 0, sw = 0;
      if (o.done && reroute_counts(o.detail, c, sw)) {
        rerouted = true;
        changes += c;
        switches += sw;
      } else if (o.done && o.detail != kElsewhere && !owned) {
        f = o;
        owned = true;
      }
    }
    if (rerouted && (f.done || !owned))
      f.detail = "rerouted: " + std::to_string(changes) + " route changes on " +
                 std::to_string(switches) + " switches";
    out.faults.push_back(std::move(f));
  }

  // Telemetry: sample k of every machine was due at the same time since the common start.
  size_t samples = parts[0].samples.size();
  for (const RunReport& p : parts) samples = std::min(samples, p.samples.size());
  for (size_t k = 0; k < samples; ++k) {
    TelemetrySample s = parts[0].samples[k];
    for (size_t d = 0; d < s.dirs.size(); ++d) {
      const Link& l = t.links[d / 2];
      const size_t owner = static_cast<size_t>(machine_of[d % 2 ? l.b.node : l.a.node]);
      if (owner < parts.size() && d < parts[owner].samples[k].dirs.size())
        s.dirs[d] = parts[owner].samples[k].dirs[d];
    }
    for (const RunReport& p : parts)
      for (const auto& [host, counters] : p.samples[k].rxe) s.rxe[host] = counters;
    // Each machine's own hosts' QPs and switches' buffers.
    s.qps.clear();
    for (const RunReport& p : parts) {
      s.qps.insert(s.qps.end(), p.samples[k].qps.begin(), p.samples[k].qps.end());
      for (const auto& [sw, used] : p.samples[k].buffers) s.buffers[sw] = used;
    }
    out.samples.push_back(std::move(s));
  }

  // The link model's mode: a machine without fq adds no delay, which the report must say.
  for (const RunReport& p : parts) {
    if (p.link_mode && (!out.link_mode || !p.link_mode->fq)) out.link_mode = p.link_mode;
    out.sample_slack_bytes = std::max(out.sample_slack_bytes, p.sample_slack_bytes);
  }

  std::set<std::string> seen;
  for (size_t k = 0; k < parts.size(); ++k)
    for (const std::string& n : parts[k].notes)
      if (seen.insert(n).second) out.notes.push_back(machines[k] + ": " + n);
  return out;
}

}  // namespace fabemu
