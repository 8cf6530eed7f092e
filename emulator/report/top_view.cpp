// The frame: a header (the lab, its time, the step, the totals, links down), then one line per
// direction, busiest first.
#include "report/top_view.h"

#include <algorithm>

#include "model/time_scale.h"
#include "report/report.h"
#include "util/units.h"

namespace fabemu {
namespace {

struct Row {
  size_t dir;
  double bps, drops_per_s, ce_per_s, paused;  // paused: fraction of the interval
  uint64_t backlog, p99_ns, rate_bps;
};

std::string cut(std::string s, size_t width) {
  if (s.size() > width) s.resize(width);
  return s;
}

std::string per_second(double v) {
  if (v <= 0) return "0";
  if (v < 10) return printf_string("%.2f", v);
  return printf_string("%.3g", v);
}

// Bytes as a queue holds them: "0", "950 B", "48.5 KB", "3.1 MB".
std::string backlog_text(uint64_t bytes) {
  if (bytes == 0) return "0";
  if (bytes < 1000) return std::to_string(bytes) + " B";
  if (bytes < 1'000'000) return printf_string("%.3g KB", double(bytes) / 1e3);
  return printf_string("%.3g MB", double(bytes) / 1e6);
}

// Links whose direction the link model holds down, by name ("leaf1:spine1").
std::string links_down(const TopInput& in) {
  std::vector<std::string> names;
  const Topology& t = in.model.topo;
  for (size_t l = 0; l < t.links.size(); ++l) {
    const size_t a = 2 * l, b = a + 1;
    if ((in.local[a] && in.now.dirs[a].down) || (in.local[b] && in.now.dirs[b].down))
      names.push_back(link_name(t, t.links[l]));
  }
  if (names.empty()) return "none";
  std::string out = std::to_string(names.size()) + ":";
  for (size_t i = 0; i < names.size() && i < 12; ++i) out += " " + names[i];
  if (names.size() > 12) out += " ...";
  return out;
}

}  // namespace

std::vector<std::string> top_frame(const TopInput& in, size_t rows, size_t width) {
  const Topology& t = in.model.topo;
  std::vector<Row> ranked;
  double total_bps = 0, total_drops = 0, total_ce = 0;
  for (size_t d = 0; d < in.now.dirs.size(); ++d) {
    if (!in.local[d]) continue;
    const DirectionSample g = growth(in.before, in.now, d);
    const double s = read_interval(in.before, in.now, d);
    Row r{d,
          0,
          0,
          0,
          0,
          in.now.dirs[d].queued_bytes,
          in.now.dirs[d].queue_delay_p99_ns,
          in.now.dirs[d].rate_bps};
    if (s > 0) {
      r.bps = double(g.bytes) * 8 / s;
      r.drops_per_s = double(g.drops) / s;
      r.ce_per_s = double(g.ce_marks) / s;
      r.paused = std::min(1.0, double(g.pause_ns) / 1e9 / s);
    }
    total_bps += r.bps;
    total_drops += r.drops_per_s;
    total_ce += r.ce_per_s;
    ranked.push_back(r);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Row& a, const Row& b) {
    return a.bps + a.drops_per_s > b.bps + b.drops_per_s;
  });
  std::vector<std::string> out;
  const TimeScale& ts = in.model.time_scale;
  out.push_back(printf_string(
      "fabemu top: lab %s (%s), %zu hosts, %zu switches, %s; fabric time %.6f s; %s",
      in.lab.c_str(), in.model.scenario.name.c_str(), t.hosts().size(),
      t.nodes.size() - t.hosts().size(),
      ts.dilated() ? ("x" + format_factor(ts.factor) + " dilated").c_str() : "real time",
      in.fabric_s, in.shaping.empty() ? "link model unknown" : in.shaping.c_str()));
  out.push_back("step: " + (in.step.empty() ? std::string("none playing") : in.step));
  out.push_back(printf_string("total: %s on %zu directions, %s drops/s, %s CE/s; links down: %s",
                              format_rate_short(total_bps).c_str(), ranked.size(),
                              per_second(total_drops).c_str(), per_second(total_ce).c_str(),
                              links_down(in).c_str()));
  out.push_back(printf_string(
      "rates per second of the real fabric; read in %.0f ms; q or ^C quits%s",
      in.read_seconds * 1e3, in.error.empty() ? "" : ("; unread: " + in.error).c_str()));
  out.push_back(printf_string("%-24s %-11s %11s %5s %9s %9s %6s %9s %9s", "DIRECTION", "TIER",
                              "RATE", "UTIL", "DROPS/s", "CE/s", "PAUSE", "BACKLOG", "QDELAY99"));
  for (size_t k = 0; k < ranked.size() && k < rows; ++k) {
    const Row& r = ranked[k];
    const std::string util =
        r.rate_bps ? printf_string("%.0f%%", 100 * r.bps / double(r.rate_bps)) : "-";
    out.push_back(printf_string(
        "%-24s %-11s %11s %5s %9s %9s %5.1f%% %9s %9s",
        direction_name(t, static_cast<int>(r.dir / 2), r.dir % 2).c_str(),
        t.links[r.dir / 2].cls.c_str(), format_rate_short(r.bps).c_str(), util.c_str(),
        per_second(r.drops_per_s).c_str(), per_second(r.ce_per_s).c_str(), 100 * r.paused,
        backlog_text(r.backlog).c_str(), r.p99_ns ? format_time_short(r.p99_ns).c_str() : "-"));
  }
  for (std::string& line : out) line = cut(std::move(line), width);
  return out;
}

}  // namespace fabemu
