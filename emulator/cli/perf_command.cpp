// `perf LAB SERVER CLIENT`: checks the request, says what runs where, reports the outcome.
#include <cstdio>

#include "apply/lab.h"
#include "cli/commands.h"
#include "runtime/perf.h"

namespace fabemu::cli {

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
  auto setup =
      plan_perf(*model, paths, {args.server, args.client, args.tool, args.timeout_s, args.extra});
  if (!setup) {
    print_error("perf: " + setup.error().message);
    return errno_of(setup.error()) == EINVAL ? kExitBadInput : kExitFailed;
  }
  std::printf("perf: %s, server %s (%s), client %s (%s), over %s\n", args.tool.c_str(),
              args.server.c_str(), setup->server_address.c_str(), args.client.c_str(),
              setup->client_address.c_str(), setup->over.c_str());
  if (!setup->dilation_note.empty()) std::printf("perf: %s\n", setup->dilation_note.c_str());
  std::fflush(stdout);
  auto outcome = run_perf(std::move(*setup));
  if (!outcome) {
    print_error("perf: " + outcome.error().what());
    return kExitFailed;
  }
  if (outcome->ok) return kExitOk;
  print_error("perf: " + outcome->failure);
  if (!outcome->server_output.empty())
    std::fprintf(stderr, "--- server (%s) said:\n%s", args.server.c_str(),
                 outcome->server_output.c_str());
  return kExitFailed;
}

}  // namespace fabemu::cli
