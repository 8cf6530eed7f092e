// `perf LAB SERVER CLIENT`: checks the request, says what runs where, reports the outcome.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "apply/lab.h"
#include "cli/commands.h"
#include "runtime/perf.h"

namespace fabemu::cli {
namespace {

// perf --json: the run, the tool's table as the lab's wall clock measured it and in the real
// fabric's units, and the client's output.
Json perf_json(const PerfArgs& args, const LabModel& m, const PerfSetup& setup,
               const PerfOutcome& o) {
  const PerftestTable table = parse_perftest(o.client_output);
  Json rows = Json::array(), real_rows = Json::array();
  for (const std::vector<double>& row : table.rows) {
    Json wall = Json::object(), real = Json::object();
    for (size_t c = 0; c < table.columns.size(); ++c) {
      wall[table.columns[c]] = row[c];
      real[table.columns[c]] = real_value(table.columns[c], row[c], m.time_scale.factor);
    }
    rows.push_back(std::move(wall));
    real_rows.push_back(std::move(real));
  }
  return {{"schema", session::kSchemaVersion},
          {"command", "perf"},
          {"lab", args.lab},
          {"tool", args.tool},
          {"server", args.server},
          {"client", args.client},
          {"server_address", setup.server_address},
          {"client_address", setup.client_address},
          {"over", setup.over},
          {"time_scale", m.time_scale.factor},
          {"ok", o.ok},
          {"failure", o.failure},
          {"rows", rows},
          {"real_rows", real_rows},
          {"output", o.client_output},
          {"server_output", o.server_output}};
}

}  // namespace

int cmd_perf(const PerfArgs& args, const LabPaths& base) {
  if (!is_perf_tool(args.tool)) {
    print_error("perf: --tool " + args.tool +
                " is not one of ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_send_lat, "
                "ucx_perftest");
    return kExitBadInput;
  }
  if (args.timeout_s <= 0) {
    print_error("perf: --timeout takes a positive number of seconds");
    return kExitBadInput;
  }
  if (!require_root("perf")) return kExitNeedsRoot;
  LabPaths paths = base;
  paths.lab = args.lab;
  auto model = lab_model(paths);
  if (!model) return lab_error(model.error());
  if (model->part)
    for (const std::string& host : {args.server, args.client})
      if (const int id = model->topo.find(host); id >= 0 && !local_node(*model, id)) {
        print_error("perf: " + host + " is on machine " +
                    model->part->machines[model->part->placement.machine_of[id]] +
                    "; perf between hosts of one lab across machines is not supported yet (run "
                    "the tools with `fabemu exec LAB:HOST --on slurm`)");
        return kExitFailed;
      }
  auto setup = plan_perf(
      *model, paths, {args.server, args.client, args.tool, args.timeout_s, args.extra, args.json});
  if (!setup) {
    print_error("perf: " + setup.error().message);
    return errno_of(setup.error()) == EINVAL ? kExitBadInput : kExitFailed;
  }
  const PerfSetup described = *setup;
  // With --json, what would be said on stdout goes to stderr.
  FILE* say = args.json ? stderr : stdout;
  std::fprintf(say, "perf: %s, server %s (%s), client %s (%s), over %s\n", args.tool.c_str(),
               args.server.c_str(), setup->server_address.c_str(), args.client.c_str(),
               setup->client_address.c_str(), setup->over.c_str());
  if (!setup->dilation_note.empty()) std::fprintf(say, "perf: %s\n", setup->dilation_note.c_str());
  std::fflush(say);
  auto outcome = run_perf(std::move(*setup));
  if (!outcome) {
    print_error("perf: " + outcome.error().what());
    return kExitFailed;
  }
  if (args.json) {
    print_json(perf_json(args, *model, described, *outcome));
    return outcome->ok ? kExitOk : kExitFailed;
  }
  if (outcome->ok) return kExitOk;
  print_error("perf: " + outcome->failure);
  if (!outcome->server_output.empty())
    std::fprintf(stderr, "--- server (%s) said:\n%s", args.server.c_str(),
                 outcome->server_output.c_str());
  return kExitFailed;
}

void add_perf_command(CLI::App& app, CommandLine& cl) {
  auto a = std::make_shared<PerfArgs>();
  auto* cmd = app.add_subcommand(
      "perf",
      "Benchmark between two hosts: perftest over their rxe devices (server started first, "
      "client against its address), or ucx_perftest: perf LAB SERVER CLIENT [-- TOOL ARGS]");
  cmd->add_option("lab", a->lab, "Lab name")->required();
  cmd->add_option("server", a->server, "Host running the server side")->required();
  cmd->add_option("client", a->client, "Host running the client side")->required();
  cmd->add_option("--tool", a->tool,
                  "ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_send_lat or "
                  "ucx_perftest")
      ->capture_default_str();
  cmd->add_option("--timeout", a->timeout_s, "Seconds for the whole run")->capture_default_str();
  cmd->add_option("extra", a->extra, "More arguments for the tool, after --");
  cmd->add_flag("--json", a->json,
                "The result as one JSON object (docs/json.md): perftest's table as measured "
                "and in the real fabric's units, the tool's output");
  cmd->callback([a, &cl] {
    if (!a->extra.empty() && a->extra.front() == "--") a->extra.erase(a->extra.begin());
    cl.exit = cmd_perf(*a, cl.base);
  });
}

}  // namespace fabemu::cli
