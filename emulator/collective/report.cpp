// Table and JSON formatting of benchmark results.
#include "collective/report.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "util/json.h"
#include "util/units.h"

namespace fabemu::collective {
namespace {

std::string_view redop_of(const Layout& l) {
  return l.reduces() ? "sum" : "none";
}

double average_busbw(const std::vector<SizeResult>& results, Collective c) {
  double sum = 0;
  int n = 0;
  for (const auto& r : results) {
    if (r.layout.collective != c) continue;
    sum += r.busbw;
    ++n;
  }
  return n ? sum / n : 0;
}

}  // namespace

std::string table_header(const RunInfo& run, Collective c, const std::string& algorithm) {
  std::string out =
      printf_string("#  collective %s  library %s  transport %s  ranks %d  algorithm %s\n",
                    std::string(name_of(c)).c_str(), run.library.c_str(), run.transport.c_str(),
                    run.ranks, algorithm.c_str());
  if (run.time_scale != 1)
    out += printf_string(
        "#  time dilated x%g: time, algbw and busbw of the real fabric (the lab's wall clock "
        "ran %g times longer)\n",
        run.time_scale, run.time_scale);
  out += printf_string("#%11s  %12s  %6s  %6s  %5s  %11s  %11s  %11s  %7s", "size", "count", "type",
                       "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  if (run.predictions) out += printf_string("  %10s  %6s", "pred_busbw", "ratio");
  return out + "\n";
}

std::string table_row(const RunInfo& run, const SizeResult& r) {
  const Layout& l = r.layout;
  std::string out = printf_string("%12llu  %12llu  %6s  %6s  %5d  %11.2f  %11.3f  %11.3f  %7llu",
                                  static_cast<unsigned long long>(l.size),
                                  static_cast<unsigned long long>(l.count), "float",
                                  std::string(redop_of(l)).c_str(), l.root(), r.time_us, r.algbw,
                                  r.busbw, static_cast<unsigned long long>(r.wrong));
  if (run.predictions) {
    auto ratio = r.ratio();
    out += r.pred_busbw ? printf_string("  %10.3f", *r.pred_busbw) : printf_string("  %10s", "-");
    out += ratio ? printf_string("  %6.2f", *ratio) : printf_string("  %6s", "-");
  }
  return out + "\n";
}

std::string table_footer(const std::vector<SizeResult>& results) {
  if (results.empty()) return "";
  return printf_string("# avg busbw (GB/s): %.3f\n",
                       average_busbw(results, results.front().layout.collective));
}

std::string verdict_line(const std::vector<SizeResult>& results) {
  uint64_t wrong = 0;
  std::string where;
  for (const auto& r : results) {
    if (r.wrong == 0) continue;
    wrong += r.wrong;
    where += printf_string("%s%s %llu (%llu)", where.empty() ? ": " : ", ",
                           std::string(name_of(r.layout.collective)).c_str(),
                           static_cast<unsigned long long>(r.layout.size),
                           static_cast<unsigned long long>(r.wrong));
  }
  if (wrong == 0) return "# wrong values: 0 OK\n";
  return printf_string("# wrong values: %llu FAILED", static_cast<unsigned long long>(wrong)) +
         where + "\n";
}

std::string json_result(const RunInfo& run, const SizeResult& r) {
  const Layout& l = r.layout;
  auto optional = [](std::optional<double> v) { return v ? Json(*v) : Json(nullptr); };
  Json j = {{"type", "result"},
            {"collective", name_of(l.collective)},
            {"library", run.library},
            {"transport", run.transport},
            {"algorithm", r.algorithm},
            {"ranks", run.ranks},
            {"size", l.size},
            {"count", l.count},
            {"dtype", "float"},
            {"redop", redop_of(l)},
            {"root", l.root()},
            {"iterations", r.iterations},
            {"warmup", r.warmup},
            {"time_us", r.time_us},
            {"wall_time_us", r.wall_time_us},
            {"time_scale", run.time_scale},
            {"algbw_gbps", r.algbw},
            {"busbw_gbps", r.busbw},
            {"bus_factor", bus_factor(l.collective, l.ranks)},
            {"wrong", r.wrong},
            {"rank_time_us", r.rank_time_us},
            {"iteration_time_us", r.iteration_time_us},
            {"rank_wrong", r.rank_wrong},
            {"pred_time_us", optional(r.pred_time_us)},
            {"pred_busbw_gbps", optional(r.pred_busbw)},
            {"ratio", optional(r.ratio())}};
  return json_text(j) + "\n";
}

std::string json_summary(const RunInfo& run, const std::vector<SizeResult>& results) {
  uint64_t wrong = 0;
  std::vector<Collective> seen;
  for (const auto& r : results) {
    wrong += r.wrong;
    if (std::find(seen.begin(), seen.end(), r.layout.collective) == seen.end()) {
      seen.push_back(r.layout.collective);
    }
  }
  Json avg = Json::object();
  for (Collective c : seen) avg[std::string(name_of(c))] = average_busbw(results, c);
  Json j = {{"type", "summary"},  {"library", run.library},    {"transport", run.transport},
            {"ranks", run.ranks}, {"results", results.size()}, {"wrong", wrong},
            {"ok", wrong == 0},   {"avg_busbw_gbps", avg}};
  return json_text(j) + "\n";
}

}  // namespace fabemu::collective
