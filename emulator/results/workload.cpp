// fabemu-collective's JSON lines read back.
#include "results/workload.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "util/json.h"

namespace fabemu {

double jain_index(const std::vector<double>& x) {
  double sum = 0, squares = 0;
  for (double v : x) sum += v, squares += v * v;
  return squares > 0 ? sum * sum / (double(x.size()) * squares) : 0;
}

std::vector<SizeResult> read_benchmark_results(const std::string& text) {
  std::vector<SizeResult> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    // A line cut short by a killed rank does not parse: the step's verdict says what happened.
    const Json n = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!n.is_object() || n.value("type", "") != "result") continue;
    try {
      SizeResult r;
      r.size = n.at("size").get<uint64_t>();
      r.time_us = n.at("time_us").get<double>();
      r.wall_time_us = n.value("wall_time_us", r.time_us);
      r.busbw_gbps = n.at("busbw_gbps").get<double>();
      r.wrong = n.at("wrong").get<uint64_t>();
      if (n.contains("pred_busbw_gbps") && n["pred_busbw_gbps"].is_number())
        r.pred_busbw_gbps = n["pred_busbw_gbps"].get<double>();
      if (n.contains("pred_time_us") && n["pred_time_us"].is_number())
        r.pred_time_us = n["pred_time_us"].get<double>();
      if (n.contains("rank_time_us")) r.rank_time_us = n["rank_time_us"].get<std::vector<double>>();
      if (n.contains("iteration_time_us"))
        r.iteration_time_us = n["iteration_time_us"].get<std::vector<double>>();
      r.library = n.value("library", "");
      r.transport = n.value("transport", "");
      r.ranks = n.value("ranks", 0);
      r.time_scale = n.value("time_scale", 1.0);
      out.push_back(std::move(r));
    } catch (const Json::exception&) {
      // A result line without its fields is not one this version wrote: skipped.
    }
  }
  return out;
}

std::string ratio_note(const std::string& json_lines) {
  double worst = 1;
  std::istringstream lines(json_lines);
  for (std::string line; std::getline(lines, line);) {
    const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("ratio") && j["ratio"].is_number())
      worst = std::min(worst, j["ratio"].get<double>());
  }
  if (worst >= 0.5) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", worst);
  return std::string("busbw down to ") + buf +
         "x of the link model's prediction: the machine (CPU time per packet per hop), not the "
         "emulated links, set the speed; shape the links lower to study the fabric "
         "(bench/collective_busbw.py)";
}

}  // namespace fabemu
