// Figures the report derives from a run, beyond the counters themselves; shared by the
// terminal summary and the page.
#include <algorithm>
#include <map>

#include "report/report.h"
#include "util/units.h"

namespace fabemu {

double read_time(const TelemetrySample& s, size_t d) {
  return d < s.dirs.size() && s.dirs[d].t_s >= 0 ? s.dirs[d].t_s : s.t_s;
}

double read_interval(const TelemetrySample& from, const TelemetrySample& to, size_t d) {
  return read_time(to, d) - read_time(from, d);
}

std::string link_mode_note(const LabModel& m, const RunReport& r) {
  if (!r.link_mode || r.link_mode->fq) return "";
  const Topology& t = m.topo;
  int ports = 0;
  if (!r.samples.empty()) {
    for (const DirectionSample& d : r.samples.back().dirs) ports += d.shaped;
  } else {
    for (const Link& l : t.links)
      if (!l.a_to_b.empty() || !l.b_to_a.empty()) ports = 2 * static_cast<int>(t.links.size());
  }
  if (ports == 0) return "";  // no link model on any port: nothing asked of it
  const auto& lossless = m.scenario.fabric.lossless;
  std::string s = link_model_text(*r.link_mode, ports, lossless && lossless->hold_queue);
  // What the scenario asked for and did not get.
  int asked = 0;
  uint64_t delay = 0, jitter = 0;
  for (const Link& l : t.links)
    for (const LinkShape* shape : {&l.a_to_b, &l.b_to_a}) {
      const uint64_t d = shape->delay_ns.value_or(0), j = shape->jitter_ns.value_or(0);
      asked += d || j;
      delay = std::max(delay, d);
      jitter = std::max(jitter, j);
    }
  if (asked) {
    std::string what = delay ? "delay up to " + format_time_ns(delay) : "";
    if (jitter)
      what += (what.empty() ? "" : " and ") + std::string("jitter up to ") + format_time_ns(jitter);
    s += "; the scenario asks for " + what + " on " + std::to_string(asked) + " of " +
         std::to_string(2 * t.links.size()) +
         " link directions, none of which was added: latencies and times here are without it";
  }
  return s;
}

std::vector<DirectionFigures> rank_directions(const LabModel& m, const RunReport& r) {
  std::vector<DirectionFigures> out;
  if (r.samples.size() < 2) return out;
  const Topology& t = m.topo;
  const TelemetrySample &first = r.samples.front(), &last = r.samples.back();
  for (size_t d = 0; d < last.dirs.size() && d / 2 < t.links.size(); ++d) {
    DirectionFigures f;
    f.dir = d;
    f.name = direction_name(t, static_cast<int>(d / 2), d % 2 == 1);
    f.growth = growth(first, last, d);
    f.rate_bps = double(f.growth.bytes) * 8 / std::max(1e-12, read_interval(first, last, d));
    const Link& l = t.links[d / 2];
    f.line_bps = (d % 2 ? l.b_to_a : l.a_to_b).rate_bps.value_or(0);
    out.push_back(std::move(f));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DirectionFigures& x, const DirectionFigures& y) {
                     const DirectionSample &a = x.growth, &b = y.growth;
                     return a.drops != b.drops ? a.drops > b.drops : a.bytes > b.bytes;
                   });
  return out;
}

std::optional<RankSpread> rank_spread(const Topology& t, const SizeResult& s) {
  if (s.rank_time_us.empty()) return std::nullopt;
  std::vector<double> sorted = s.rank_time_us;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  RankSpread out;
  out.min_us = sorted.front();
  out.max_us = sorted.back();
  out.median_us = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  out.slowest_rank = static_cast<int>(
      std::max_element(s.rank_time_us.begin(), s.rank_time_us.end()) - s.rank_time_us.begin());
  for (const Node& node : t.nodes)
    if (node.role == Role::Host && node.rank == out.slowest_rank) out.slowest_host = node.name;
  return out;
}

bool LinkDowns::any() const {
  return std::any_of(times_down.begin(), times_down.end(), [](int n) { return n > 0; }) ||
         std::find(down_at_end.begin(), down_at_end.end(), true) != down_at_end.end();
}

LinkDowns link_downs(const Topology& t, const std::vector<AppliedFault>& faults) {
  const size_t n = t.links.size();
  LinkDowns out{std::vector<int>(n, 0), std::vector<bool>(n, false)};
  std::vector<bool>& down = out.down_at_end;
  for (size_t l = 0; l < n; ++l)  // a link the scenario starts down
    down[l] = t.links[l].a_to_b.down.value_or(false) || t.links[l].b_to_a.down.value_or(false);
  auto set = [&](int l, bool now_down) {
    if (now_down && !down[l]) ++out.times_down[l];
    down[l] = now_down;
  };
  // A flap repeats its target many times: each is looked up once.
  std::map<std::string, std::vector<int>> links_of_target;
  auto links_of = [&](const std::string& target) -> const std::vector<int>& {
    auto [it, fresh] = links_of_target.try_emplace(target);
    if (fresh)
      if (auto dirs = find_directions(t, target); dirs.ok())
        for (const Direction& d : *dirs)
          if (std::find(it->second.begin(), it->second.end(), d.link) == it->second.end())
            it->second.push_back(d.link);
    return it->second;
  };
  using K = FaultStep::Kind;
  for (const AppliedFault& f : faults) {
    if (!f.done) continue;
    const FaultStep& s = f.step;
    if (s.link_step() || (s.kind == K::Shape && s.shape.down)) {
      const bool now_down = s.kind == K::Shape ? *s.shape.down : s.kind == K::Down;
      for (int l : links_of(s.target)) set(l, now_down);
    } else if (s.kind == K::Crash || s.kind == K::Restart || s.kind == K::NicDown ||
               s.kind == K::NicUp) {
      const int host = t.find(s.target);
      if (host < 0) continue;
      for (int l : t.links_of(host)) {
        const bool nic = s.kind == K::NicDown || s.kind == K::NicUp;
        if (nic && t.links[l].end(host).ifname != s.nic) continue;
        set(l, s.kind == K::Crash || s.kind == K::NicDown);
      }
    }
  }
  return out;
}

std::vector<size_t> plotted_samples(const RunReport& r) {
  const auto& s = r.samples;
  std::vector<size_t> out;
  if (s.empty()) return out;
  std::vector<double> gaps;
  for (size_t i = 1; i < s.size(); ++i) gaps.push_back(s[i].t_s - s[i - 1].t_s);
  double half_median = 0;
  if (!gaps.empty()) {
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    half_median = gaps[gaps.size() / 2] / 2;
  }
  out.push_back(0);
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i].t_s - s[out.back()].t_s >= half_median) out.push_back(i);
  // The final sample too close to the one before: it ends the interval before it instead.
  if (out.back() != s.size() - 1) {
    if (out.size() >= 2)
      out.back() = s.size() - 1;
    else
      out.push_back(s.size() - 1);
  }
  return out;
}

std::vector<PlottedInterval> plotted_intervals(const RunReport& r, size_t d) {
  std::vector<PlottedInterval> out;
  const std::vector<size_t> kept = plotted_samples(r);
  for (size_t k = 1; k < kept.size(); ++k) {
    const TelemetrySample &from = r.samples[kept[k - 1]], &to = r.samples[kept[k]];
    if (d >= to.dirs.size()) break;
    out.push_back({read_time(to, d), read_interval(from, to, d), growth(from, to, d)});
  }
  return out;
}

SamplerBound sampler_bound(const LabModel& m, const RunReport& r) {
  SamplerBound b;
  b.slack_bytes = r.sample_slack_bytes;
  if (r.samples.size() < 2) return b;
  const Topology& t = m.topo;
  const TelemetrySample& last = r.samples.back();
  double shortest = 0;
  for (size_t d = 0; d < last.dirs.size() && d / 2 < t.links.size(); ++d) {
    if (!last.dirs[d].shaped) continue;
    const Link& l = t.links[d / 2];
    if (const uint64_t line = (d % 2 ? l.b_to_a : l.a_to_b).rate_bps.value_or(0); line)
      b.slowest_line_bps = b.slowest_line_bps ? std::min(b.slowest_line_bps, line) : line;
    for (const PlottedInterval& i : plotted_intervals(r, d))
      if (i.dt_s > 0 && (shortest == 0 || i.dt_s < shortest)) shortest = i.dt_s;
  }
  b.shortest_interval_s = shortest;
  if (shortest > 0) b.bps = double(b.slack_bytes) * 8 / shortest;
  return b;
}

}  // namespace fabemu
