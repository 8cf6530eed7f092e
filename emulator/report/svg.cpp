// Pictures for the report: Graphviz DOT of the topology and the line charts of the HTML page
// (the topology picture itself is topology_svg.cpp).
#include "report/svg.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

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

namespace svg_detail {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace svg_detail

namespace {
using svg_detail::num;
}  // namespace

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

namespace {

// Every k-th of `ticks` (sorted, evenly spaced), the smallest k at which no two labels overlap:
// about 6 px a character at the charts' 10 px font, and a gap.
std::vector<double> spaced_ticks(std::vector<double> ticks, const std::function<double(double)>& px,
                                 const std::function<std::string(double)>& label_of) {
  std::sort(ticks.begin(), ticks.end());
  auto width = [&](double x) { return 6.0 * double(label_of(x).size()); };
  for (size_t k = 1; k < ticks.size(); ++k) {
    bool apart = true;
    for (size_t i = k; i < ticks.size() && apart; i += k)
      apart = px(ticks[i]) - px(ticks[i - k]) >= (width(ticks[i]) + width(ticks[i - k])) / 2 + 6;
    if (apart) {
      std::vector<double> out;
      for (size_t i = 0; i < ticks.size(); i += k) out.push_back(ticks[i]);
      return out;
    }
  }
  return {ticks.front()};
}

}  // namespace

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
                  num(W) + "\" height=\"" + num(H) + "\" viewBox=\"0 0 " + num(W) + " " + num(H) +
                  "\" style=\"max-width:100%;height:auto\" font-family=\"sans-serif\">\n";
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
  ticks = spaced_ticks(ticks, px, c.x_label_of);
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
