// SVG pieces of the report: XML escaping, a line chart with event markers, and whether the
// topology picture collapses tiers.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "report/report.h"

namespace fabemu {

std::string xml_escape(const std::string& s);

namespace svg_detail {
std::string num(double v);  // a coordinate as the pictures write it: "%.1f"
}  // namespace svg_detail

struct ChartSpec {
  std::string id, title, x_title, y_title;
  struct Series {
    std::string name;
    std::vector<std::pair<double, double>> points;
    bool dashed = false;
  };
  std::vector<Series> series;
  struct Marker {
    double x = 0;
    std::string label;
  };
  std::vector<Marker> markers;  // vertical lines (fault events)
  std::vector<double> x_ticks;  // where to label the x axis; empty: 5 even ticks
  std::function<std::string(double)> x_label_of = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return std::string(buf);
  };
};

// Whether topology_svg collapses the fabric's tiers: a tier is wider than fits a screen node by
// node (24 nodes), so that rows show their first nodes, the notable ones (drops, faults) and the
// last, with a "… N more" box for the rest, hosts grouped under their switch, and the links to a
// group drawn as one bundle labelled with its count.
bool topology_collapsed(const Topology& t);

// An <svg> with id `c.id`: axes, ticks, a polyline per series, a dashed line per marker.
std::string line_chart(const ChartSpec& c);

}  // namespace fabemu
