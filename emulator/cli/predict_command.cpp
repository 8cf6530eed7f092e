// `predict LAB`: what the link model predicts for each collective in a lab that is up, from the
// shapes its links have now: a table, or (--json) the JSON `fabemu-collective --predict` reads.
// `predict LAB --replay FILE`: the model's iteration of a training step on it instead.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "scenario/loader.h"
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

// The model's iteration of a replayed step, as `run` prints the measured one.
void print_replay(const session::ReplayPrediction& p) {
  const replay::IterationSummary& m = p.model;
  auto t = [](double ns) { return format_time_short(static_cast<uint64_t>(ns + 0.5)); };
  std::printf("replay %s (%s), as the model predicts it:\n  %s\n", p.step.file.c_str(),
              p.step.program->describe().c_str(), p.placement_line.c_str());
  std::printf("  iteration time: %s; %s\n", t(m.iteration_ns).c_str(),
              replay::describe_iteration(m).c_str());
  std::printf("    %-44s %5s %12s %12s\n", "COLLECTIVE", "COUNT", "TIME", "BUSBW");
  for (const replay::CollectiveFigure& c : m.collectives)
    std::printf("    %-44s %5d %12s %12s\n", c.what.c_str(), c.count, t(c.time_ns).c_str(),
                format_rate_short(c.busbw_Bps * 8).c_str());
  std::printf(
      "times of the real fabric: Gloo's algorithms over the lab's routes and current link shapes, "
      "each kind of group's collectives routed together, compute as recorded (docs/replay.md)\n");
}

}  // namespace

int cmd_predict_replay(const std::string& lab, const std::string& transport, bool json,
                       const std::string& file, const std::string& format,
                       const std::string& groups, const LabPaths& base) {
  auto step = load_replay_step(file, format, groups);
  if (!step)
    return report_error(
        session::with_failure(step.error().context("--replay"), session::Failure::BadInput));
  auto predicted = session::predict_replay(lab, transport, *step, base);
  if (!predicted) return report_error(predicted.error());
  if (json)
    print_json(predicted->to_json(lab, transport));
  else
    print_replay(*predicted);
  return kExitOk;
}

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
    std::string lab, transport = "tcp", replay, format = "simai", groups;
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
  cmd->add_option("--replay", a->replay,
                  "Instead: the model's iteration time of this training step on the lab (a SimAI "
                  "workload file, or a Chakra trace's PREFIX): docs/replay.md");
  cmd->add_option("--format", a->format, "--replay's format: simai or chakra")
      ->capture_default_str()
      ->check(CLI::IsMember({"simai", "chakra"}));
  cmd->add_option("--comm-groups", a->groups, "A Chakra --replay's process groups (JSON)");
  cmd->callback([a, &cl] {
    cl.exit = a->replay.empty() ? cmd_predict(a->lab, a->transport, a->json, cl.base)
                                : cmd_predict_replay(a->lab, a->transport, a->json, a->replay,
                                                     a->format, a->groups, cl.base);
  });
}

}  // namespace fabemu::cli
