// The HTML report: one self-contained page (inline SVG and CSS, no scripts, nothing fetched).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "report/replay_html.h"
#include "report/report.h"
#include "report/svg.h"
#include "util/units.h"

namespace fabemu {
namespace {

// A unit for an axis whose values reach `max`: the largest of `units` (name, scale) under which
// the values stay at least 1, so that a dilated lab's milliseconds or Gbit/s read as such.
struct Unit {
  const char* name;
  double scale;  // value in the unit = value * scale
};
Unit unit_for(double max, std::initializer_list<Unit> units) {
  Unit best = *units.begin();
  for (const Unit& u : units)
    if (max * u.scale >= 1) return u;
  return best;
}

Unit time_unit(double max_s) {
  return unit_for(max_s, {{"s", 1}, {"ms", 1e3}, {"us", 1e6}, {"ns", 1e9}});
}

Unit rate_unit(double max_bps) {
  return unit_for(
      max_bps,
      {{"Tbit/s", 1e-12}, {"Gbit/s", 1e-9}, {"Mbit/s", 1e-6}, {"kbit/s", 1e-3}, {"bit/s", 1}});
}

// Busbw against size (log2 axis), measured and predicted, per collective step.
std::string busbw_chart(const RunReport& r) {
  ChartSpec c;
  c.id = "busbw-plot";
  c.title = "Bus bandwidth per message size";
  c.x_title = "message size";
  double top = 0;
  for (const StepReport& s : r.steps)
    for (const SizeResult& x : s.results) top = std::max({top, x.busbw_gbps, x.pred_busbw_gbps});
  const bool gb = top >= 1;
  c.y_title = gb ? "busbw (GB/s)" : "busbw (MB/s)";
  const double scale = gb ? 1 : 1e3;
  c.x_label_of = [](double x) { return format_size(static_cast<uint64_t>(std::exp2(x) + 0.5)); };
  // Ticks at the powers of two the sizes span (line_chart keeps every k-th where the labels
  // would crowd), so that they read 64K, 1M, 16M whatever sizes were measured.
  double lo = 1e300, hi = -1e300;
  for (const StepReport& s : r.steps)
    for (const SizeResult& x : s.results) {
      lo = std::min(lo, std::log2(double(std::max<uint64_t>(1, x.size))));
      hi = std::max(hi, std::log2(double(std::max<uint64_t>(1, x.size))));
    }
  for (double e = std::ceil(lo - 1e-9); e <= hi + 1e-9; ++e) c.x_ticks.push_back(e);
  if (c.x_ticks.empty() && lo <= hi) c.x_ticks = {lo, hi};  // between two powers of two
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const StepReport& s = r.steps[i];
    if (s.results.empty()) continue;
    ChartSpec::Series measured{"[" + std::to_string(i) + "] " + s.collective + " measured", {}};
    ChartSpec::Series predicted{"[" + std::to_string(i) + "] predicted", {}, true};
    for (const SizeResult& x : s.results) {
      const double lx = std::log2(double(x.size));
      measured.points.push_back({lx, x.busbw_gbps * scale});
      if (x.pred_busbw_gbps >= 0) predicted.points.push_back({lx, x.pred_busbw_gbps * scale});
    }
    c.series.push_back(std::move(measured));
    if (!predicted.points.empty()) c.series.push_back(std::move(predicted));
  }
  return line_chart(c);
}

std::vector<ChartSpec::Marker> fault_markers(const RunReport& r, const Unit& time) {
  std::vector<ChartSpec::Marker> out;
  for (const AppliedFault& f : r.faults)
    if (f.done) out.push_back({f.applied_s * time.scale, f.step.what});
  return out;
}

// Throughput over time of the busiest directions, drops over time of every direction that
// dropped, and (where PFC paused a link) the share of each interval the lossless class was
// paused, with the fault events marked.
std::tuple<std::string, std::string, std::string> link_charts(const LabModel& m,
                                                              const RunReport& r) {
  const Topology& t = m.topo;
  const size_t dirs = r.samples.empty() ? 0 : r.samples.back().dirs.size();
  std::vector<double> total(dirs, 0);
  std::vector<uint64_t> dropped(dirs, 0), paused(dirs, 0);
  for (size_t d = 0; d < dirs; ++d) {
    const DirectionSample g = run_growth(r, d);
    total[d] = double(g.bytes);
    dropped[d] = g.drops;
    paused[d] = g.pause_ns;
  }
  // The real fabric's time and rates: a dilated lab's are N times shorter and faster.
  const double span = r.samples.empty() ? 1 : r.samples.back().t_s;
  const Unit time = time_unit(span);
  double peak = 0;
  for (size_t d = 0; d < dirs; ++d) peak = std::max(peak, total[d] * 8 / std::max(span, 1e-12));
  const Unit bits = rate_unit(peak);
  // Direction d's `per_second` (of the growth between plotted samples, over the time between
  // its own reads) over time.
  auto series = [&](size_t d, auto per_second) {
    ChartSpec::Series s{direction_name(t, static_cast<int>(d / 2), d % 2 == 1), {}};
    for (const PlottedInterval& i : plotted_intervals(r, d))
      s.points.push_back({i.t_s * time.scale, per_second(i.growth, std::max(1e-12, i.dt_s))});
    return s;
  };
  std::vector<size_t> order(dirs);
  for (size_t i = 0; i < dirs; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return total[a] > total[b]; });
  ChartSpec rate;
  rate.id = "link-plot";
  rate.title = "Busiest link directions over time";
  rate.x_title = std::string(time.name) + " since the workload started" +
                 (m.time_scale.dilated() ? " (the real fabric's time)" : "");
  rate.y_title = bits.name;
  rate.markers = fault_markers(r, time);
  ChartSpec drops = rate;
  drops.id = "drop-plot";
  drops.title = "Frames dropped by the link model (loss, queue, down) over time";
  drops.y_title = std::string("drops per ") + (time.scale == 1 ? "second" : time.name);
  for (size_t k = 0; k < std::min<size_t>(6, order.size()); ++k) {
    const size_t d = order[k];
    if (total[d] <= 0) break;
    rate.series.push_back(series(d, [&](const DirectionSample& g, double dt) {
      return double(g.bytes) * 8 / dt * bits.scale;
    }));
  }
  for (size_t d = 0; d < dirs && drops.series.size() < 8; ++d)
    if (dropped[d])
      drops.series.push_back(series(d, [&](const DirectionSample& g, double dt) {
        return double(g.drops) / dt / time.scale;
      }));
  if (drops.series.empty() && r.samples.size() >= 2)  // an empty chart would look broken
    drops.series.push_back(
        {"no link dropped a frame",
         {{r.samples.front().t_s * time.scale, 0}, {r.samples.back().t_s * time.scale, 0}}});
  ChartSpec pauses = rate;
  pauses.series.clear();
  pauses.id = "pause-plot";
  pauses.title = "PFC: share of the time the lossless class was paused, longest paused first";
  pauses.y_title = "% of the interval paused";
  std::vector<size_t> by_pause = order;
  std::sort(by_pause.begin(), by_pause.end(),
            [&](size_t a, size_t b) { return paused[a] > paused[b]; });
  for (size_t k = 0; k < std::min<size_t>(8, by_pause.size()) && paused[by_pause[k]]; ++k)
    pauses.series.push_back(series(by_pause[k], [&](const DirectionSample& g, double dt) {
      return std::min(100.0, 100.0 * double(g.pause_ns) / (dt * 1e9));
    }));
  return {line_chart(rate), line_chart(drops), pauses.series.empty() ? "" : line_chart(pauses)};
}

// DCQCN: each QP's rate over time, and the switches' shared buffers'
// occupancy over time, beside the links' charts: where a rate falls, the queue behind it.
std::string dcqcn_and_buffer_charts(const LabModel& m, const RunReport& r) {
  if (r.samples.empty()) return "";
  const Unit time = time_unit(r.samples.back().t_s);
  std::map<std::string, ChartSpec::Series> qps, buffers;
  double peak_rate = 0, peak_bytes = 0;
  for (const TelemetrySample& s : r.samples) {
    for (const QpSample& q : s.qps) peak_rate = std::max(peak_rate, double(q.rate_bps));
    for (const auto& [sw, used] : s.buffers) peak_bytes = std::max(peak_bytes, double(used));
  }
  const Unit bits = rate_unit(peak_rate);
  for (const TelemetrySample& s : r.samples) {
    for (const QpSample& q : s.qps) {
      auto& series = qps[q.host + " -> " + q.peer + " QP " + std::to_string(q.qpn)];
      series.name = q.host + " -> " + q.peer + " QP " + std::to_string(q.qpn);
      series.points.push_back({s.t_s * time.scale, double(q.rate_bps) * bits.scale});
    }
    for (const auto& [sw, used] : s.buffers) {
      buffers[sw].name = sw;
      buffers[sw].points.push_back({s.t_s * time.scale, double(used) / 1024});
    }
  }
  const std::string x_title = std::string(time.name) + " since the workload started" +
                              (m.time_scale.dilated() ? " (the real fabric's time)" : "");
  std::string h;
  if (!qps.empty()) {
    ChartSpec c;
    c.id = "qp-plot";
    c.title = "DCQCN: each QP's rate at its sender's NIC over time";
    c.x_title = x_title;
    c.y_title = bits.name;
    c.markers = fault_markers(r, time);
    for (auto& [name, s] : qps)
      if (c.series.size() < 12) c.series.push_back(std::move(s));
    h += line_chart(c);
  }
  if (peak_bytes > 0) {
    ChartSpec c;
    c.id = "buffer-plot";
    c.title = "Switches' shared buffers: bytes in use over time";
    c.x_title = x_title;
    c.y_title = "KiB";
    c.markers = fault_markers(r, time);
    for (auto& [name, s] : buffers)
      if (c.series.size() < 12) c.series.push_back(std::move(s));
    h += line_chart(c);
  }
  return h;
}

std::string td(const std::string& s) {
  return "<td>" + xml_escape(s) + "</td>";
}

std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A time of the real fabric: seconds as before, or with its unit when the lab was dilated.
std::string real_time(const LabModel& m, double s) {
  if (!m.time_scale.dilated()) return fixed(s, 3);
  return format_time_short(static_cast<uint64_t>(s * 1e9));
}

// The drops of a direction by cause: "queue 12, down 3", or the kernel's where the link model
// did not count (an unshaped port).
std::string drop_causes(const DirectionSample& g) {
  if (!g.drops) return "-";
  if (!g.shaped) return "port's own";
  std::string out;
  for (const auto& [n, what] : {std::pair{g.drop_queue, "queue"},
                                {g.drop_loss, "loss"},
                                {g.drop_down, "down"},
                                {g.drop_watchdog, "PFC watchdog"}})
    if (n) out += (out.empty() ? "" : ", ") + std::string(what) + " " + std::to_string(n);
  return out;
}

// Every direction over the run (rank_directions: dropping first, then busiest), the first
// kLinkRows of a big lab.
constexpr size_t kLinkRows = 32;
std::string link_table(const LabModel& m, const RunReport& r) {
  const std::vector<DirectionFigures> rows = rank_directions(m, r);
  if (rows.empty()) return "";
  const double secs = std::max(1e-12, run_seconds(r));
  bool pfc = false;
  for (const DirectionFigures& f : rows) pfc |= f.growth.pause_ns > 0;
  std::string h = std::string(
                      "<table id=\"links\"><tr><th>direction</th><th>MB</th><th>rate</th><th>of "
                      "its rate</th><th>drops</th><th>by cause</th><th>CE marks</th><th>queue "
                      "delay p99</th>") +
                  (pfc ? "<th>PFC paused</th><th>XOFFs</th>" : "") + "</tr>\n";
  const size_t shown = std::min(kLinkRows, rows.size());
  for (size_t k = 0; k < shown; ++k) {
    const DirectionFigures& f = rows[k];
    const DirectionSample& g = f.growth;
    const std::string qd =
        g.shaped && g.queue_delay_p99_ns ? "<" + format_time_short(g.queue_delay_p99_ns) : "-";
    h += "<tr>" + td(f.name) + td(fixed(double(g.bytes) / 1e6, 2)) +
         td(format_rate_short(f.rate_bps)) +
         td(f.line_bps ? fixed(100 * f.rate_bps / double(f.line_bps), 1) + "%" : "-") + "<td" +
         (g.drops ? " class=\"bad\">" : ">") + std::to_string(g.drops) + "</td>" +
         td(drop_causes(g)) + td(std::to_string(g.ce_marks)) + td(qd);
    if (pfc)
      h += td(g.pause_ns ? format_time_short(g.pause_ns) + " (" +
                               fixed(100.0 * double(g.pause_ns) / (secs * 1e9), 1) + "%)"
                         : "-") +
           td(std::to_string(g.pause_events));
    h += "</tr>\n";
  }
  h += "</table>\n";
  if (shown < rows.size())
    h += "<p class=\"note\">The first " + std::to_string(shown) + " of " +
         std::to_string(rows.size()) +
         " directions: those that dropped frames, then the busiest; report.jsonl has every "
         "one.</p>\n";
  return h;
}

// The busiest ECMP groups over the run, a horizontal bar per member (its MB, its share of the
// group's), busiest group first; a big lab's first kGroupCharts.
constexpr size_t kGroupCharts = 8;
std::string group_charts(const LabModel& m, const RunReport& r) {
  const std::vector<GroupBalance> groups = run_group_balances(m, r);
  if (groups.empty() || groups.front().bytes == 0) return "";
  using svg_detail::num;
  std::string h =
      "<h2>ECMP groups</h2>\n<p class=\"note\">Bytes each next hop of a switch's ECMP group "
      "carried over the run (its port's bytes), busiest group first. max/mean 1 and Jain's "
      "index 1 are an even spread; a few big flows hashed onto one member show as one long "
      "bar.</p>\n<div id=\"groups\">\n";
  size_t shown = 0;
  for (const GroupBalance& g : groups) {
    if (shown == kGroupCharts || g.bytes == 0) break;
    ++shown;
    uint64_t most = 1;
    for (const MemberLoad& x : g.members) most = std::max(most, x.bytes);
    constexpr double kLabel = 150, kBar = 300, kRow = 18, kTail = 190;
    const double height = 24 + kRow * double(g.members.size());
    h += "<svg class=\"group\" width=\"" + num(kLabel + kBar + kTail) + "\" height=\"" +
         num(height) + "\"><text x=\"0\" y=\"14\" font-weight=\"bold\">" +
         xml_escape(m.topo.nodes[g.node].name) + ", " + std::to_string(g.members.size()) +
         " next hops: " + fixed(double(g.bytes) / 1e6, 2) + " MB, max/mean " +
         fixed(g.max_over_mean, 2) + ", Jain " + fixed(g.jain, 3) + "</text>\n";
    for (size_t k = 0; k < g.members.size(); ++k) {
      const MemberLoad& x = g.members[k];
      const double y = 22 + kRow * double(k), w = kBar * double(x.bytes) / double(most);
      h += "<text x=\"0\" y=\"" + num(y + 12) + "\">" + xml_escape(x.name) + "</text><rect x=\"" +
           num(kLabel) + "\" y=\"" + num(y + 2) + "\" width=\"" + num(w) + "\" height=\"" +
           num(kRow - 4) + "\" fill=\"#4a7ab5\"/><text x=\"" + num(kLabel + w + 4) + "\" y=\"" +
           num(y + 12) + "\">" + fixed(double(x.bytes) / 1e6, 2) + " MB (" +
           fixed(100.0 * double(x.bytes) / double(g.bytes), 1) + "%)</text>\n";
    }
    h += "</svg>\n";
  }
  h += "</div>\n";
  if (shown < groups.size())
    h += "<p class=\"note\">The busiest " + std::to_string(shown) + " of " +
         std::to_string(groups.size()) + " groups; report.jsonl has every one.</p>\n";
  return h;
}

// Per traffic step where switches balance in eBPF: the worst ECMP group, the frames that reached
// their last hop out of order, the balancers' path changes and TCP's reaction.
std::string order_table(const RunReport& r) {
  std::string rows;
  auto pct = [](uint64_t part, uint64_t of) { return fixed(of ? 100.0 * part / of : 0.0, 2); };
  for (const StepReport& s : r.steps) {
    if (!s.order) continue;
    const StepOrder& o = *s.order;
    const GroupBalance* worst = nullptr;
    for (const GroupBalance& g : s.groups)
      if (g.bytes && (!worst || g.max_over_mean > worst->max_over_mean)) worst = &g;
    rows += "<tr><td>" + xml_escape(s.title) + "</td><td>" +
            (worst ? fixed(worst->max_over_mean, 2) + " (" + xml_escape(worst->name) + ")"
                   : std::string("-")) +
            "</td><td>" + std::to_string(o.reordered) + " of " + std::to_string(o.frames) + " (" +
            pct(o.reordered, o.frames) + "%)</td><td>" + std::to_string(o.flows_reordered) +
            " of " + std::to_string(o.flows) + "</td><td>" +
            (o.worst.empty() ? std::string("-")
                             : xml_escape(o.worst[0].flow) + " (" +
                                   pct(o.worst[0].reordered, o.worst[0].frames) + "%)") +
            "</td><td>" + std::to_string(o.moves) + "</td><td>" +
            std::to_string(o.tcp.retrans_segs) + " of " + std::to_string(o.tcp.out_segs) +
            "</td><td>" + std::to_string(o.tcp.reorder_seen) + "</td><td>" +
            std::to_string(o.tcp.dsacks) + "</td></tr>\n";
  }
  if (rows.empty()) return "";
  return "<h2>Spreading and order</h2>\n<p class=\"note\">Per step: the worst ECMP group "
         "(busiest member over the mean), the frames that reached their last hop below their "
         "flow's next sequence number (TCP by IP ID, RoCEv2 by PSN), the balancers' path changes, "
         "and the hosts' TCP segments retransmitted, reorderings detected and DSACKs "
         "received.</p>\n<table id=\"order\"><tr><th>step</th><th>worst group</th><th>frames out "
         "of order</th><th>flows reordered</th><th>worst flow</th><th>path changes</th><th>TCP "
         "retransmitted</th><th>reorderings seen</th><th>DSACKs</th></tr>\n" +
         rows + "</table>\n";
}

// Per collective step and size, how the ranks' times spread (each rank's mean iteration) and
// which host the slowest ran on: the time column is the slowest rank's.
std::string rank_table(const LabModel& m, const RunReport& r) {
  std::string rows;
  auto us = [](double v) { return format_time_short(static_cast<uint64_t>(v * 1e3 + 0.5)); };
  for (size_t i = 0; i < r.steps.size(); ++i)
    for (const SizeResult& x : r.steps[i].results) {
      const auto spread = rank_spread(m.topo, x);
      if (!spread) continue;
      rows +=
          "<tr>" + td("[" + std::to_string(i) + "] " + r.steps[i].collective) +
          td(format_size(x.size)) + td(std::to_string(x.rank_time_us.size())) +
          td(us(spread->min_us)) + td(us(spread->median_us)) + td(us(spread->max_us)) +
          td(spread->min_us > 0 ? "+" + fixed(100 * (spread->max_us / spread->min_us - 1), 1) + "%"
                                : "-") +
          td((spread->slowest_host.empty() ? "" : spread->slowest_host + " ") + "(rank " +
             std::to_string(spread->slowest_rank) + ")") +
          "</tr>\n";
    }
  if (rows.empty()) return "";
  return std::string("<h3>Per-rank times</h3>\n<p>Each rank's mean time of one iteration") +
         (m.time_scale.dilated() ? ", in the real fabric's time like the busbw above" : "") +
         "; a collective is as slow as its slowest rank.</p>\n<table id=\"ranks\"><tr><th>step"
         "</th><th>size</th><th>ranks</th><th>fastest</th><th>median</th><th>slowest</th><th>"
         "slowest over fastest</th><th>slowest rank's host</th></tr>\n" +
         rows + "</table>\n";
}

// Where the throughput plot's figures come from and how far they can run ahead of a link.
std::string sampler_note(const LabModel& m, const RunReport& r) {
  const SamplerBound b = sampler_bound(m, r);
  std::string h =
      "<p id=\"sampler-note\" class=\"note\">Each rate is what a link direction sent between "
      "two reads of its counters over the time between those reads (each read is timestamped; "
      "frames the link model has admitted but not yet sent are left out, as a port counts a "
      "frame when it leaves).";
  if (b.slack_bytes && b.slowest_line_bps && b.shortest_interval_s > 0)
    h += " A read can miss up to " + std::to_string(b.slack_bytes) +
         " bytes still being counted (a frame on each CPU), which the next interval then "
         "carries: a plotted rate exceeds what the link sent by at most that over the interval, "
         "here " +
         format_rate_short(b.bps) + " (over the shortest, " +
         format_time_short(static_cast<uint64_t>(b.shortest_interval_s * 1e9)) + "), " +
         fixed(100 * b.share(), 2) + "% of the slowest link's " +
         format_rate_short(double(b.slowest_line_bps)) + ".";
  return h + "</p>\n";
}

}  // namespace

std::string report_html(const LabModel& m, const RunReport& r) {
  const Topology& t = m.topo;
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width\"><title>fabemu run: " +
      xml_escape(r.lab) +
      "</title>\n<style>body{font-family:sans-serif;margin:24px;color:#222}"
      "table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px "
      "8px;font-size:13px;text-align:left}th{background:#eee}.ok{color:#2a7a2a}.bad{color:#c62828;"
      "font-weight:bold}.warn{background:#fff4e5;border-left:4px solid #f58518;padding:6px 10px}"
      ".note{color:#555;font-size:13px}svg{display:block;margin:8px 0 20px;border:1px solid #ddd}"
      // Nothing wider than the window: pictures scale down (they have a viewBox), long names in
      // a table cell wrap.
      "svg{max-width:100%;height:auto}table{max-width:100%}td{overflow-wrap:anywhere}</style>"
      "</head>\n<body>\n";
  h += "<h1>fabemu run: " + xml_escape(r.lab) + "</h1>\n<p id=\"summary\">Scenario " +
       xml_escape(r.scenario_file) + ", seed " + std::to_string(r.seed) + "; " +
       std::to_string(t.host_count()) + " hosts, " + std::to_string(t.switches().size()) +
       " switches (" + (ovs_switches(m) ? "Open vSwitch" : "routers") + "), " +
       std::to_string(t.links.size()) + " links; reachability " + std::to_string(r.reachable) +
       "/" + std::to_string(r.pairs) + " host pairs.</p>\n";
  if (m.time_scale.dilated()) {
    double wall = 0;
    for (const StepReport& s : r.steps) wall = std::max(wall, s.wall_start_s + s.wall_seconds);
    const std::string n = format_factor(m.time_scale.factor);
    h += "<p id=\"dilation\"><b>dilated x" + n + ": " + fixed(wall, 1) +
         " s of wall clock.</b> The lab ran " + n +
         " times slower than the real fabric the scenario describes (" +
         xml_escape(m.time_scale_why) +
         "); every time, rate and bandwidth on this page is the real fabric's.</p>\n";
  }
  if (const std::string note = link_mode_note(m, r); !note.empty())
    h += "<p id=\"link-model\" class=\"warn\"><b>No delay or jitter added.</b> The " +
         xml_escape(note) + ".</p>\n";
  h += std::string(
           "<h2>Topology</h2>\n<p>Links coloured by the share of their rate they carried over the "
           "run (green idle, orange busy), red where the link model dropped more than 1% of the "
           "frames; hover for figures.") +
       (link_downs(t, r.faults).any()
            ? " Dashed where a fault took the link down during the run: ↓ when it was up again "
              "at the end, ✕ when it was still down."
            : "") +
       (topology_collapsed(t)
            ? " The fabric is too big to draw node by node: each tier shows its first nodes, "
              "those where frames were dropped or a fault struck, and its last; a dashed box "
              "stands for the rest, hosts are grouped under their switch, and the links to a "
              "group are one line labelled with their count, red when any of them dropped."
            : "") +
       "</p>\n" + topology_svg(m, &r);
  const bool dilated = m.time_scale.dilated();
  h += std::string("<h2>Workload</h2>\n<table id=\"steps\"><tr><th>step</th><th>verdict</th>") +
       (dilated ? "<th>start</th><th>took</th><th>wall clock (s)</th>"
                : "<th>start (s)</th><th>seconds</th>") +
       "</tr>\n";
  for (const StepReport& s : r.steps)
    h += "<tr>" + td(s.title) + "<td class=\"" +
         (s.ok ? "ok\">ok" : "bad\">FAILED: " + xml_escape(s.failure)) + "</td>" +
         td(real_time(m, s.start_s)) + td(real_time(m, s.seconds)) +
         (dilated ? td(fixed(s.wall_seconds, 2)) : "") + "</tr>\n";
  h += "</table>\n" + busbw_chart(r) + rank_table(m, r) + replay_html(r);
  if (!r.faults.empty()) {
    h += "<h2>Fault timeline</h2>\n<table id=\"faults\"><tr><th>due</th><th>applied"
         "</th><th>fault</th><th>result</th></tr>\n";
    for (const AppliedFault& f : r.faults) {
      h += "<tr>" + td(real_time(m, f.due_s)) + td(f.done ? real_time(m, f.applied_s) : "-") +
           td(f.step.what) +
           td(f.done            ? f.detail
              : f.error.empty() ? "not reached (the workload ended)"
                                : f.error) +
           "</tr>\n";
    }
    h += "</table>\n";
  }
  const auto [rate, drops, pauses] = link_charts(m, r);
  h += "<h2>Links</h2>\n" + link_table(m, r) + rate + sampler_note(m, r) + drops + pauses;
  h += dcqcn_and_buffer_charts(m, r);
  h += group_charts(m, r);
  h += order_table(r);
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
