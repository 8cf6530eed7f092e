// The HTML report: one self-contained page (inline SVG and CSS, no scripts, nothing fetched).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/report.h"
#include "report/svg.h"
#include "util/units.h"

namespace fabemu {
namespace {

// Busbw against size (log2 axis), measured and predicted, per collective step.
std::string busbw_chart(const RunReport& r) {
  ChartSpec c;
  c.id = "busbw-plot";
  c.title = "Bus bandwidth per message size";
  c.x_title = "message size";
  c.y_title = "busbw (MB/s)";
  c.x_label_of = [](double x) { return format_size(static_cast<uint64_t>(std::exp2(x) + 0.5)); };
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const StepReport& s = r.steps[i];
    if (s.results.empty()) continue;
    ChartSpec::Series measured{"[" + std::to_string(i) + "] " + s.collective + " measured", {}};
    ChartSpec::Series predicted{"[" + std::to_string(i) + "] predicted", {}, true};
    for (const SizeResult& x : s.results) {
      const double lx = std::log2(double(x.size));
      measured.points.push_back({lx, x.busbw_gbps * 1e3});
      if (x.pred_busbw_gbps >= 0) predicted.points.push_back({lx, x.pred_busbw_gbps * 1e3});
      if (std::find(c.x_ticks.begin(), c.x_ticks.end(), lx) == c.x_ticks.end())
        c.x_ticks.push_back(lx);
    }
    c.series.push_back(std::move(measured));
    if (!predicted.points.empty()) c.series.push_back(std::move(predicted));
  }
  return line_chart(c);
}

std::vector<ChartSpec::Marker> fault_markers(const RunReport& r) {
  std::vector<ChartSpec::Marker> out;
  for (const AppliedFault& f : r.faults)
    if (f.done) out.push_back({f.applied_s, f.step.what});
  return out;
}

// Throughput over time of the busiest directions, and drops over time of every direction that
// dropped, with the fault events marked.
std::pair<std::string, std::string> link_charts(const LabModel& m, const RunReport& r) {
  const Topology& t = m.topo;
  const size_t dirs = r.samples.empty() ? 0 : r.samples.back().dirs.size();
  std::vector<double> total(dirs, 0);
  std::vector<uint64_t> dropped(dirs, 0);
  for (size_t d = 0; d < dirs; ++d) {
    const DirectionSample g = run_growth(r, d);
    total[d] = double(g.bytes);
    dropped[d] = g.drops;
  }
  // Direction d's `per_second` (of the growth between consecutive samples) over time.
  auto series = [&](size_t d, double (*per_second)(const DirectionSample&, double)) {
    ChartSpec::Series s{direction_name(t, static_cast<int>(d / 2), d % 2 == 1), {}};
    for (size_t i = 1; i < r.samples.size(); ++i) {
      const double dt = std::max(1e-6, r.samples[i].t_s - r.samples[i - 1].t_s);
      s.points.push_back(
          {r.samples[i].t_s, per_second(growth(r.samples[i - 1], r.samples[i], d), dt)});
    }
    return s;
  };
  std::vector<size_t> order(dirs);
  for (size_t i = 0; i < dirs; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return total[a] > total[b]; });
  ChartSpec rate;
  rate.id = "link-plot";
  rate.title = "Busiest link directions over time";
  rate.x_title = "seconds since the workload started";
  rate.y_title = "Mbit/s";
  rate.markers = fault_markers(r);
  ChartSpec drops = rate;
  drops.id = "drop-plot";
  drops.title = "Frames dropped by the link model (loss, queue, down) over time";
  drops.y_title = "drops per second";
  for (size_t k = 0; k < std::min<size_t>(6, order.size()); ++k) {
    const size_t d = order[k];
    if (total[d] <= 0) break;
    rate.series.push_back(series(d, [](const DirectionSample& g, double dt) {
      return double(g.bytes) * 8 / dt / 1e6;  // Mbit/s
    }));
  }
  for (size_t d = 0; d < dirs && drops.series.size() < 8; ++d)
    if (dropped[d])
      drops.series.push_back(
          series(d, [](const DirectionSample& g, double dt) { return double(g.drops) / dt; }));
  if (drops.series.empty() && r.samples.size() >= 2)  // an empty chart would look broken
    drops.series.push_back(
        {"no link dropped a frame", {{r.samples.front().t_s, 0}, {r.samples.back().t_s, 0}}});
  return {line_chart(rate), line_chart(drops)};
}

std::string td(const std::string& s) {
  return "<td>" + xml_escape(s) + "</td>";
}

std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::string report_html(const LabModel& m, const RunReport& r) {
  const Topology& t = m.topo;
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>fabemu run: " +
      xml_escape(r.lab) +
      "</title>\n<style>body{font-family:sans-serif;margin:24px;color:#222}"
      "table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px "
      "8px;font-size:13px;text-align:left}th{background:#eee}.ok{color:#2a7a2a}.bad{color:#c62828;"
      "font-weight:bold}svg{display:block;margin:8px 0 20px;border:1px solid #ddd}</style>"
      "</head>\n<body>\n";
  h += "<h1>fabemu run: " + xml_escape(r.lab) + "</h1>\n<p id=\"summary\">Scenario " +
       xml_escape(r.scenario_file) + ", seed " + std::to_string(r.seed) + "; " +
       std::to_string(t.host_count()) + " hosts, " + std::to_string(t.switches().size()) +
       " switches (" + (ovs_switches(m) ? "Open vSwitch" : "routers") + "), " +
       std::to_string(t.links.size()) + " links; reachability " + std::to_string(r.reachable) +
       "/" + std::to_string(r.pairs) + " host pairs.</p>\n";
  h += "<h2>Topology</h2>\n<p>Links coloured by the share of their rate they carried over the "
       "run (green idle, orange busy), red where the link model dropped more than 1% of the "
       "frames; hover for figures.</p>\n" +
       topology_svg(m, &r);
  h += "<h2>Workload</h2>\n<table id=\"steps\"><tr><th>step</th><th>verdict</th><th>start "
       "(s)</th><th>seconds</th></tr>\n";
  for (const StepReport& s : r.steps)
    h += "<tr>" + td(s.title) + "<td class=\"" +
         (s.ok ? "ok\">ok" : "bad\">FAILED: " + xml_escape(s.failure)) + "</td>" +
         td(fixed(s.start_s, 2)) + td(fixed(s.seconds, 2)) + "</tr>\n";
  h += "</table>\n" + busbw_chart(r);
  if (!r.faults.empty()) {
    h += "<h2>Fault timeline</h2>\n<table id=\"faults\"><tr><th>due (s)</th><th>applied "
         "(s)</th><th>fault</th><th>result</th></tr>\n";
    for (const AppliedFault& f : r.faults) {
      h += "<tr>" + td(fixed(f.due_s, 3)) + td(f.done ? fixed(f.applied_s, 3) : "-") +
           td(f.step.what) +
           td(f.done            ? f.detail
              : f.error.empty() ? "not reached (the workload ended)"
                                : f.error) +
           "</tr>\n";
    }
    h += "</table>\n";
  }
  const auto [rate, drops] = link_charts(m, r);
  h += "<h2>Links over time</h2>\n" + rate + drops;
  if (!r.expectations.empty()) {
    h += "<h2>Expectations</h2>\n<table id=\"expect\">\n";
    for (const ExpectResult& e : r.expectations)
      h += "<tr><td class=\"" + std::string(e.ok ? "ok\">pass" : "bad\">FAIL") + "</td>" +
           td(e.what) + "</tr>\n";
    h += "</table>\n";
  }
  return h + "</body></html>\n";
}

}  // namespace fabemu
