// `perf LAB SERVER CLIENT`: checks the request, says what runs where, reports the outcome.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"

namespace fabemu::cli {
namespace {

// What runs where, on stdout (stderr with --json: stdout is the object's).
class PerfObserver : public session::Observer {
 public:
  explicit PerfObserver(FILE* to) : to_(to) {}
  void remark(const std::string& line) override {
    std::fprintf(to_, "%s\n", line.c_str());
    std::fflush(to_);
  }

 private:
  FILE* to_;
};

}  // namespace

int cmd_perf(const PerfArgs& args, const LabPaths& base) {
  PerfObserver observer(args.json ? stderr : stdout);
  auto ran = session::perf(args.lab, args, base, observer);
  if (!ran) return report_error(ran.error());
  const PerfOutcome& o = ran->outcome;
  if (args.json) {
    print_json(ran->to_json());
    return o.ok ? kExitOk : kExitFailed;
  }
  if (o.ok) return kExitOk;
  print_error("perf: " + o.failure);
  if (!o.server_output.empty())
    std::fprintf(stderr, "--- server (%s) said:\n%s", args.server.c_str(), o.server_output.c_str());
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
    a->capture = a->json;
    cl.exit = cmd_perf(*a, cl.base);
  });
}

}  // namespace fabemu::cli
