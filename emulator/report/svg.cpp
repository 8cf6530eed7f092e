// Pictures for the report: the topology (layered by tier, links coloured by load and drops),
// Graphviz DOT of the same, and the two line charts of the HTML page.
#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "util/units.h"

namespace fabemu {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Where each node is drawn: one row per tier, the highest at the top, nodes spread evenly.
struct Layout {
  std::vector<double> x, y;
  double width = 0, height = 0;
};

Layout layout(const Topology& t) {
  std::map<int, std::vector<int>> rows;  // tier -> nodes, in model order
  for (size_t i = 0; i < t.nodes.size(); ++i) rows[t.nodes[i].tier].push_back(static_cast<int>(i));
  size_t widest = 1;
  for (const auto& [tier, nodes] : rows) widest = std::max(widest, nodes.size());
  Layout l;
  l.width = std::max(480.0, 46.0 * double(widest) + 60);
  l.height = 110.0 * double(rows.size()) + 40;
  l.x.resize(t.nodes.size());
  l.y.resize(t.nodes.size());
  int row = 0;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it, ++row) {
    const auto& nodes = it->second;
    for (size_t i = 0; i < nodes.size(); ++i) {
      l.x[nodes[i]] = (l.width - 60) * (double(i) + 0.5) / double(nodes.size()) + 30;
      l.y[nodes[i]] = 50.0 + 110.0 * row;
    }
  }
  return l;
}

// Green (idle) through yellow to orange (busy): the share of the link's rate it carried.
std::string load_colour(double load) {
  load = std::clamp(load, 0.0, 1.0);
  const int r = static_cast<int>(60 + 195 * std::min(1.0, 2 * load));
  const int g = static_cast<int>(170 - 60 * std::max(0.0, 2 * load - 1));
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x40", r, g);
  return buf;
}

}  // namespace

std::string topology_svg(const LabModel& m, const RunReport* r) {
  const Topology& t = m.topo;
  const Layout l = layout(t);
  // Per link: bytes (both directions, the busier one) and drops over the run.
  std::vector<double> load(t.links.size(), 0), bytes(t.links.size(), 0);
  std::vector<uint64_t> drops(t.links.size(), 0), packets(t.links.size(), 0);
  double max_bytes = 0;
  if (r && r->samples.size() >= 2) {
    const double secs = std::max(1e-3, run_seconds(*r));
    for (size_t d = 0; d < r->samples.back().dirs.size(); ++d) {
      const size_t link = d / 2;
      const DirectionSample g = run_growth(*r, d);
      const double got = double(g.bytes);
      bytes[link] = std::max(bytes[link], got);
      drops[link] += g.drops;
      packets[link] += g.packets;
      const LinkShape& shape = d % 2 ? t.links[link].b_to_a : t.links[link].a_to_b;
      if (shape.rate_bps && *shape.rate_bps)
        load[link] = std::max(load[link], got * 8 / secs / double(*shape.rate_bps));
      max_bytes = std::max(max_bytes, got);
    }
    // Unshaped links have no rate to compare with: against the busiest link instead.
    for (size_t i = 0; i < t.links.size(); ++i)
      if (!t.links[i].a_to_b.rate_bps && max_bytes > 0) load[i] = bytes[i] / max_bytes;
  }
  std::string s = "<svg id=\"topology\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                  num(l.width) + "\" height=\"" + num(l.height) + "\" viewBox=\"0 0 " +
                  num(l.width) + " " + num(l.height) + "\" font-family=\"sans-serif\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#fbfbfb\"/>\n";
  for (size_t i = 0; i < t.links.size(); ++i) {
    const Link& k = t.links[i];
    const std::string name = link_name(t, k);
    // Red where more than 1% of the frames were dropped: a congested TCP link tail-drops a
    // few by design.
    const bool dropped = drops[i] * 100 > packets[i] + drops[i] && drops[i] > 0;
    const std::string colour = dropped ? "#d62728" : r ? load_colour(load[i]) : "#8a8a8a";
    char tip[200];
    std::snprintf(tip, sizeof tip,
                  "%s: %.1f%% of its rate (busier direction), %.2f MB, %llu "
                  "frames dropped",
                  name.c_str(), 100 * load[i], bytes[i] / 1e6,
                  static_cast<unsigned long long>(drops[i]));
    s += "<g class=\"link\" data-link=\"" + xml_escape(name) + "\"><title>" + xml_escape(tip) +
         "</title><line x1=\"" + num(l.x[k.a.node]) + "\" y1=\"" + num(l.y[k.a.node]) + "\" x2=\"" +
         num(l.x[k.b.node]) + "\" y2=\"" + num(l.y[k.b.node]) + "\" stroke=\"" + colour +
         "\" stroke-width=\"" +
         (dropped ? "4"
          : r     ? num(1.5 + 3 * load[i])
                  : "1.5") +
         "\"/></g>\n";
  }
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    const bool host = n.role == Role::Host;
    s += "<g class=\"node " + std::string(host ? "host" : "switch") + "\" data-node=\"" +
         xml_escape(n.name) + "\"><title>" + xml_escape(n.name) + "</title>";
    if (host)
      s += "<circle cx=\"" + num(l.x[i]) + "\" cy=\"" + num(l.y[i]) +
           "\" r=\"11\" fill=\"#4c78a8\"/>";
    else
      s += "<rect x=\"" + num(l.x[i] - 20) + "\" y=\"" + num(l.y[i] - 12) +
           "\" width=\"40\" height=\"24\" rx=\"4\" fill=\"#555\"/>";
    s += "<text x=\"" + num(l.x[i]) + "\" y=\"" + num(l.y[i] + (host ? 26 : 4)) +
         "\" font-size=\"10\" text-anchor=\"middle\" fill=\"" + (host ? "#222" : "#fff") + "\">" +
         xml_escape(n.name) + "</text></g>\n";
  }
  return s + "</svg>\n";
}

std::string topology_dot(const LabModel& m) {
  const Topology& t = m.topo;
  std::string s = "graph \"" + m.scenario.name + "\" {\n  rankdir=BT;\n";
  std::map<int, std::vector<std::string>> tiers;
  for (const Node& n : t.nodes) {
    s += "  \"" + n.name + "\" [shape=" + (n.role == Role::Host ? "ellipse" : "box") + "];\n";
    tiers[n.tier].push_back(n.name);
  }
  for (const auto& [tier, names] : tiers) {
    s += "  { rank=same;";
    for (const auto& n : names) s += " \"" + n + "\";";
    s += " }\n";
  }
  for (const Link& k : t.links) {
    std::string label = k.a_to_b.str();
    s += "  \"" + t.nodes[k.a.node].name + "\" -- \"" + t.nodes[k.b.node].name + "\"";
    if (!label.empty()) s += " [label=\"" + label + "\"]";
    s += ";\n";
  }
  return s + "}\n";
}

std::string line_chart(const ChartSpec& c) {
  constexpr double W = 760, H = 300, L = 70, R = 170, T = 30, B = 45;
  double xmin = 1e300, xmax = -1e300, ymax = 0;
  for (const auto& series : c.series)
    for (const auto& [x, y] : series.points) {
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  for (const auto& mk : c.markers) {
    xmin = std::min(xmin, mk.x);
    xmax = std::max(xmax, mk.x);
  }
  if (xmin > xmax) xmin = 0, xmax = 1;
  if (xmax == xmin) xmax = xmin + 1;
  if (ymax <= 0) ymax = 1;
  auto px = [&](double x) { return L + (W - L - R) * (x - xmin) / (xmax - xmin); };
  auto py = [&](double y) { return H - B - (H - T - B) * y / ymax; };
  std::string s = "<svg id=\"" + c.id +
                  "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
                  "width=\"" +
                  num(W) + "\" height=\"" + num(H) + "\" font-family=\"sans-serif\">\n";
  s += "<text x=\"" + num(L) + "\" y=\"18\" font-size=\"13\">" + xml_escape(c.title) + "</text>\n";
  s += "<line x1=\"" + num(L) + "\" y1=\"" + num(H - B) + "\" x2=\"" + num(W - R) + "\" y2=\"" +
       num(H - B) + "\" stroke=\"#333\"/><line x1=\"" + num(L) + "\" y1=\"" + num(T) + "\" x2=\"" +
       num(L) + "\" y2=\"" + num(H - B) + "\" stroke=\"#333\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double y = ymax * i / 4;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", y);
    s += "<text x=\"" + num(L - 6) + "\" y=\"" + num(py(y) + 4) +
         "\" font-size=\"10\" text-anchor=\"end\">" + buf + "</text>";
  }
  std::vector<double> ticks = c.x_ticks;
  if (ticks.empty())
    for (int i = 0; i <= 4; ++i) ticks.push_back(xmin + (xmax - xmin) * i / 4);
  for (double x : ticks)
    s += "<text x=\"" + num(px(x)) + "\" y=\"" + num(H - B + 16) +
         "\" font-size=\"10\" text-anchor=\"middle\">" + xml_escape(c.x_label_of(x)) + "</text>\n";
  s += "<text x=\"" + num((L + W - R) / 2) + "\" y=\"" + num(H - 6) +
       "\" font-size=\"11\" text-anchor=\"middle\">" + xml_escape(c.x_title) + "</text>";
  s += "<text x=\"14\" y=\"" + num((T + H - B) / 2) +
       "\" font-size=\"11\" text-anchor=\"middle\" "
       "transform=\"rotate(-90 14 " +
       num((T + H - B) / 2) + ")\">" + xml_escape(c.y_title) + "</text>\n";
  for (size_t i = 0; i < c.markers.size(); ++i) {
    const auto& mk = c.markers[i];
    // Labels step down the plot so that events close in time stay readable.
    s += "<g class=\"fault-marker\"><title>" + xml_escape(mk.label) + "</title><line x1=\"" +
         num(px(mk.x)) + "\" y1=\"" + num(T) + "\" x2=\"" + num(px(mk.x)) + "\" y2=\"" +
         num(H - B) + "\" stroke=\"#d62728\" stroke-dasharray=\"4 3\"/><text x=\"" +
         num(px(mk.x) + 3) + "\" y=\"" + num(T + 10 + 11.0 * double(i % 6)) +
         "\" font-size=\"9\" fill=\"#d62728\">" + xml_escape(mk.label) + "</text></g>\n";
  }
  static const char* colours[] = {"#4c78a8", "#f58518", "#54a24b", "#b279a2",
                                  "#e45756", "#72b7b2", "#eeca3b", "#9d755d"};
  for (size_t i = 0; i < c.series.size(); ++i) {
    const auto& series = c.series[i];
    const char* colour = colours[i % 8];
    std::string points;
    for (const auto& [x, y] : series.points) points += num(px(x)) + "," + num(py(y)) + " ";
    s += "<g class=\"series\" data-series=\"" + xml_escape(series.name) + "\"><polyline points=\"" +
         points + "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"1.8\"" +
         (series.dashed ? " stroke-dasharray=\"5 3\"" : "") + "/>";
    for (const auto& [x, y] : series.points)
      if (series.points.size() <= 24)
        s += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"2.5\" fill=\"" +
             colour + "\"/>";
    s += "<text x=\"" + num(W - R + 8) + "\" y=\"" + num(T + 14 + 14.0 * double(i)) +
         "\" font-size=\"10\" fill=\"" + colour + "\">" + xml_escape(series.name) + "</text></g>\n";
  }
  return s + "</svg>\n";
}

}  // namespace fabemu
