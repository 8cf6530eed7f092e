// `predict LAB`: what the link model predicts for each collective in a lab that is up, from the
// shapes its links have now: a table, or (--json) the JSON `fabemu-collective --predict` reads.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "util/units.h"

namespace fabemu::cli {
namespace {

// The sizes the table shows busbw at: nccl-tests' usual span.
constexpr uint64_t kSizes[] = {64 << 10, 1 << 20, 16 << 20, 256 << 20};

void print_table(const Json& predictions) {
  std::printf("%-14s %-16s %5s %10s", "COLLECTIVE", "ALGORITHM", "BUS", "LATENCY");
  for (uint64_t s : kSizes) std::printf(" %9s", ("@" + format_size(s)).c_str());
  std::printf("  BOTTLENECK\n");
  for (const auto& [name, p] : predictions.items()) {
    if (!p.is_object()) continue;  // the header: schema, command, lab, transport
    const double latency = p.value("latency_s", 0.0), per_byte = p.value("seconds_per_byte", 0.0),
                 bus = p.value("bus_factor", 1.0);
    std::printf("%-14s %-16s %5.2f %10s", name.c_str(), p.value("algorithm", "").c_str(), bus,
                format_time_short(static_cast<uint64_t>(latency * 1e9)).c_str());
    for (uint64_t s : kSizes) {
      const double t = latency + per_byte * double(s);
      if (per_byte == 0 || t <= 0)
        std::printf(" %9s", "-");
      else
        std::printf(" %9.4g", double(s) * bus / t / 1e9);
    }
    std::printf("  %s\n", p.value("bottleneck", "").c_str());
  }
  std::printf(
      "busbw in GB/s of the real fabric (nccl-tests' conventions) at each size; '-' where no link "
      "on the paths has a rate. --json: the model, as fabemu-collective --predict reads it\n");
}

}  // namespace

int cmd_predict(const std::string& lab, const std::string& transport, bool json,
                const LabPaths& base) {
  auto predicted = session::predict(lab, transport, base);
  if (!predicted) return report_error(predicted.error());
  if (json)
    print_json(*predicted);
  else
    print_table(*predicted);
  return kExitOk;
}

void add_predict_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    std::string lab, transport = "tcp";
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "predict",
      "The link model's prediction for each collective (Gloo's algorithms over the fabric's "
      "routes and current link shapes): busbw at 64K to 256M, the bottleneck");
  cmd->add_option("lab", a->lab, "Lab name")->required();
  cmd->add_flag("--json", a->json,
                "The model as one JSON object (docs/json.md; what fabemu-collective --predict "
                "reads)");
  cmd->add_option("--transport", a->transport, "tcp or ibverbs")->capture_default_str();
  cmd->callback([a, &cl] { cl.exit = cmd_predict(a->lab, a->transport, a->json, cl.base); });
}

}  // namespace fabemu::cli
