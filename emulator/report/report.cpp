// Run report data: the benchmark's results read back, expectations checked, JSON lines.
#include "report/report.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "util/json.h"
#include "util/units.h"

namespace fabemu {

std::vector<SizeResult> read_benchmark_results(const std::string& text) {
  std::vector<SizeResult> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"type\":\"result\"") == std::string::npos) continue;
    try {
      // JSON is YAML's flow style: yaml-cpp reads these lines as they are.
      const YAML::Node n = YAML::Load(line);
      SizeResult r;
      r.size = n["size"].as<uint64_t>();
      r.time_us = n["time_us"].as<double>();
      r.busbw_gbps = n["busbw_gbps"].as<double>();
      r.wrong = n["wrong"].as<uint64_t>();
      if (n["pred_busbw_gbps"] && !n["pred_busbw_gbps"].IsNull())
        r.pred_busbw_gbps = n["pred_busbw_gbps"].as<double>();
      for (const auto& t : n["rank_time_us"]) r.rank_time_us.push_back(t.as<double>());
      out.push_back(std::move(r));
    } catch (const YAML::Exception&) {
      // A line cut short by a killed rank: the step's verdict says what happened.
    }
  }
  return out;
}

DirectionSample growth(const TelemetrySample& from, const TelemetrySample& to, size_t d) {
  DirectionSample g = to.dirs.at(d);
  if (d >= from.dirs.size()) return g;
  const DirectionSample& a = from.dirs[d];
  auto since = [](uint64_t now, uint64_t then) { return now >= then ? now - then : 0; };
  g.bytes = since(g.bytes, a.bytes);
  g.packets = since(g.packets, a.packets);
  g.drops = since(g.drops, a.drops);
  g.ce_marks = since(g.ce_marks, a.ce_marks);
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
  return out;
}

std::string report_json_lines(const LabModel& m, const RunReport& r) {
  const Topology& t = m.topo;
  std::string out;
  auto line = [&](JsonWriter& w) { out += w.str() + "\n"; };
  {
    JsonWriter w;
    w.begin_object().field("type", "run").field("lab", r.lab).field("scenario", r.scenario_file);
    w.field("seed", r.seed).field("hosts", t.host_count());
    w.field("switches", static_cast<int>(t.switches().size()));
    w.field("links", static_cast<int>(t.links.size()));
    w.field("reachable_pairs", r.reachable).field("pairs", r.pairs).end_object();
    line(w);
  }
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const StepReport& s = r.steps[i];
    JsonWriter w;
    w.begin_object().field("type", "step").field("index", static_cast<int>(i));
    w.field("title", s.title).field("ok", s.ok).field("failure", s.failure);
    w.field("start_s", s.start_s).field("seconds", s.seconds).end_object();
    line(w);
    for (const SizeResult& res : s.results) {
      JsonWriter v;
      v.begin_object().field("type", "result").field("step", static_cast<int>(i));
      v.field("collective", s.collective).field("size", res.size).field("time_us", res.time_us);
      v.field("busbw_gbps", res.busbw_gbps).field("wrong", res.wrong);
      v.key("pred_busbw_gbps");
      if (res.pred_busbw_gbps >= 0)
        v.value(res.pred_busbw_gbps);
      else
        v.null();
      v.key("rank_time_us").begin_array();
      for (double x : res.rank_time_us) v.value(x);
      v.end_array().end_object();
      line(v);
    }
  }
  for (const AppliedFault& f : r.faults) {
    JsonWriter w;
    w.begin_object().field("type", "fault").field("what", f.step.what);
    w.field("target", f.step.target).field("due_s", f.due_s);
    w.key("applied_s");
    if (f.done)
      w.value(f.applied_s);
    else
      w.null();
    w.field("done", f.done).field("detail", f.detail).field("error", f.error).end_object();
    line(w);
  }
  for (const TelemetrySample& s : r.samples) {
    JsonWriter w;
    w.begin_object().field("type", "sample").field("t_s", s.t_s).key("directions").begin_array();
    for (size_t d = 0; d < s.dirs.size(); ++d) {
      const DirectionSample& x = s.dirs[d];
      w.begin_object().field("name", direction_name(t, static_cast<int>(d / 2), d % 2 == 1));
      w.field("bytes", x.bytes).field("packets", x.packets).field("drops", x.drops);
      w.field("ce_marks", x.ce_marks).field("queue_delay_p99_ns", x.queue_delay_p99_ns);
      w.field("shaped", x.shaped).end_object();
    }
    w.end_array();
    if (!s.rxe.empty()) {
      w.key("rxe").begin_object();
      for (const auto& [host, counters] : s.rxe) {
        w.key(host).begin_object();
        for (const auto& [k, v] : counters) w.field(k, v);
        w.end_object();
      }
      w.end_object();
    }
    w.end_object();
    line(w);
  }
  for (const ExpectResult& e : r.expectations) {
    JsonWriter w;
    w.begin_object().field("type", "expect").field("what", e.what).field("ok", e.ok).end_object();
    line(w);
  }
  return out;
}

}  // namespace fabemu
