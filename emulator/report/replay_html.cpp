// The HTML report's replay section: per replay step, each timed iteration beside the model, the
// collectives, and the first timed iteration drawn as one row of operations per rank.
#include <algorithm>
#include <cstdio>
#include <map>

#include "report/replay_html.h"
#include "report/svg.h"
#include "util/units.h"

namespace fabemu {
namespace {

using svg_detail::num;

// A figure's cell: kept on one line.
std::string cell(const std::string& s) {
  return "<td style=\"white-space:nowrap\">" + xml_escape(s) + "</td>";
}

std::string ns(double v) {
  return format_time_short(static_cast<uint64_t>(std::max(0.0, v) + 0.5));
}

std::string ratio(double measured, double model) {
  if (model <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", measured / model);
  return buf;
}

std::string iteration_table(const ReplayResult& r) {
  std::string h =
      "<table class=\"replay-iterations\"><tr><th>iteration</th><th>time</th><th>model</th>"
      "<th>ratio</th><th>slowest rank</th><th>compute</th><th>communication exposed</th>"
      "<th>passes (slowest rank)</th></tr>\n";
  const double model = r.model ? r.model->iteration_ns : 0;
  for (size_t k = 0; k < r.iterations.size(); ++k) {
    const replay::IterationSummary& it = r.iterations[k];
    const std::string host = static_cast<size_t>(it.slowest_rank) < r.placement.size()
                                 ? " (" + r.placement[it.slowest_rank] + ")"
                                 : "";
    h += "<tr>" + cell(std::to_string(k + 1)) + cell(ns(it.iteration_ns)) +
         cell(model > 0 ? ns(model) : "-") + cell(ratio(it.iteration_ns, model)) +
         cell(std::to_string(it.slowest_rank) + host) + cell(ns(it.compute_ns)) +
         cell(ns(it.exposed_comm_ns)) + "<td>" + xml_escape(replay::describe_passes(it)) +
         "</td></tr>\n";
  }
  return h + "</table>\n";
}

std::string collective_table(const ReplayResult& r) {
  if (r.iterations.empty() || r.iterations.back().collectives.empty()) return "";
  const auto& last = r.iterations.back().collectives;
  std::string h =
      "<table class=\"replay-collectives\"><tr><th>collective (last iteration)</th><th>count"
      "</th><th>time</th><th>busbw</th><th>model time</th><th>model busbw</th></tr>\n";
  for (size_t c = 0; c < last.size(); ++c) {
    const bool m = r.model && c < r.model->collectives.size();
    h += "<tr>" + cell(last[c].what) + cell(std::to_string(last[c].count)) +
         cell(ns(last[c].time_ns)) + cell(format_rate_short(last[c].busbw_Bps * 8)) +
         cell(m ? ns(r.model->collectives[c].time_ns) : "-") +
         cell(m ? format_rate_short(r.model->collectives[c].busbw_Bps * 8) : "-") + "</tr>\n";
  }
  return h + "</table>\n";
}

// One row per rank, one box per operation of the first timed iteration: compute grey on the
// row's top band, each kind of group's communication a colour and a band of its own below it
// (they overlap in time), point-to-point green; hover for what and when.
std::string timeline_svg(const ReplayResult& r, size_t step) {
  const replay::Program& p = *r.program;
  const auto& t = r.first;
  int64_t end = 1;
  for (const auto& rank : t)
    for (const replay::Span& s : rank) end = std::max(end, s.end_ns);
  static const char* const kPalette[] = {"#4c78a8", "#f58518", "#b279a2", "#e45756",
                                         "#72b7b2", "#9d755d", "#eeca3b", "#ff9da6"};
  std::map<std::string, int> band;  // kind -> band below compute (kinds the ops use)
  for (const auto& ops : p.ranks)
    for (const replay::Op& op : ops)
      if (op.kind != replay::OpKind::Compute) band.emplace(p.groups[op.group].kind, 0);
  int next = 1;
  for (auto& [kind, b] : band) b = next++;
  auto fill_of = [&](const std::string& kind) {
    return kind == "p2p" ? "#54a24b" : kPalette[(band.at(kind) - 1) % std::size(kPalette)];
  };
  const double left = 110, width = 860, bar = 5, top = 24;
  const double row = bar * (1 + static_cast<double>(band.size())) + 4;
  const double height = top + row * static_cast<double>(t.size()) + 34;
  auto x = [&](int64_t v) {
    return left + width * static_cast<double>(v) / static_cast<double>(end);
  };
  std::string h = "<svg class=\"replay-timeline\" id=\"replay-timeline-" + std::to_string(step) +
                  "\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
                  num(left + width + 20) + " " + num(height) + "\" width=\"" +
                  num(left + width + 20) + "\" height=\"" + num(height) +
                  "\" font-family=\"sans-serif\" font-size=\"10\">\n";
  h += "<text x=\"" + num(left) + "\" y=\"14\" font-size=\"12\">First timed iteration, " +
       ns(static_cast<double>(end)) + " (the real fabric's time)</text>\n";
  for (size_t rank = 0; rank < t.size(); ++rank) {
    const double y = top + row * static_cast<double>(rank);
    const std::string host = rank < r.placement.size() ? " " + r.placement[rank] : "";
    h += "<text x=\"4\" y=\"" + num(y + row / 2 + 3) + "\">" + std::to_string(rank) +
         xml_escape(host) + "</text>\n";
    for (size_t k = 0; k < t[rank].size() && k < p.ranks[rank].size(); ++k) {
      const replay::Op& op = p.ranks[rank][k];
      const replay::Span& s = t[rank][k];
      const bool compute = op.kind == replay::OpKind::Compute;
      const std::string kind = compute ? "" : p.groups[op.group].kind;
      const double y0 = y + bar * (compute ? 0 : band.at(kind));
      h += "<rect x=\"" + num(x(s.start_ns)) + "\" y=\"" + num(y0) + "\" width=\"" +
           num(std::max(0.5, x(s.end_ns) - x(s.start_ns))) + "\" height=\"" + num(bar - 1) +
           "\" fill=\"" + (compute ? "#bbbbbb" : fill_of(kind)) + "\"><title>rank " +
           std::to_string(rank) + ": " +
           xml_escape(replay::describe_op(p, op) + " (" + op.layer + ", " +
                      std::string(replay::name_of(op.pass)) + "): " + ns(double(s.start_ns)) +
                      " to " + ns(double(s.end_ns))) +
           "</title></rect>\n";
    }
  }
  // The legend.
  double lx = left;
  const double ly = height - 14;
  auto legend = [&](const char* fill, const std::string& label) {
    h += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 8) + "\" width=\"10\" height=\"8\" fill=\"" +
         fill + "\"/><text x=\"" + num(lx + 14) + "\" y=\"" + num(ly) + "\">" + xml_escape(label) +
         "</text>\n";
    lx += 24 + 6.0 * static_cast<double>(label.size());
  };
  legend("#bbbbbb", "compute");
  for (const auto& [kind, b] : band)
    legend(fill_of(kind), kind == "p2p" ? "send / receive" : kind + " groups");
  return h + "</svg>\n";
}

}  // namespace

std::string replay_html(const RunReport& r) {
  std::string h;
  for (size_t i = 0; i < r.steps.size(); ++i) {
    if (!r.steps[i].replay || !r.steps[i].replay->program) continue;
    const ReplayResult& rr = *r.steps[i].replay;
    h += "<h3 id=\"replay-" + std::to_string(i) + "\">Replay: step " + std::to_string(i) + ", " +
         xml_escape(rr.program->describe()) + "</h3>\n<p>" + std::to_string(rr.checked) +
         " elements checked in the warm-up iteration, " + std::to_string(rr.wrong) +
         " wrong. The model: " +
         (rr.model ? ns(rr.model->iteration_ns) + " an iteration"
                   : "none (" + xml_escape(rr.model_error) + ")") +
         ".</p>\n";
    h += iteration_table(rr) + collective_table(rr);
    if (!rr.first.empty()) h += timeline_svg(rr, i);
  }
  return h;
}

}  // namespace fabemu
