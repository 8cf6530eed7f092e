// `exec`: a program in one node, or in every host at once (session::exec).
#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.h"

namespace fabemu::cli {

int cmd_exec(const session::ExecRequest& req, const LabPaths& base) {
  auto out = session::exec(req, base);
  if (!out) return report_error(out.error());
  if (out->exec_error) {
    print_error(out->exec_error->what());
    return out->status;
  }
  if (req.keep_output) {
    print_json(out->to_json());
    return out->status;
  }
  int failed = 0;
  for (const auto& e : out->hosts)
    if (e.status != 0 && failed++ < 8)
      print_error(e.node + ": exit status " + std::to_string(e.status));
  if (failed > 8) print_error("... and " + std::to_string(failed - 8) + " more hosts failed");
  return out->status;
}

void add_exec_command(CLI::App& app, CommandLine& cl) {
  auto a = std::make_shared<session::ExecRequest>();
  auto* cmd = app.add_subcommand(
      "exec",
      "Run a command inside an emulated node: exec LAB:NODE -- CMD, or exec LAB --all -- CMD");
  cmd->add_option("target", a->target, "LAB:NODE, or LAB with --all")->required();
  cmd->add_option("command", a->argv, "Command and arguments, after --")->required();
  cmd->add_flag("--all", a->all, "One process per host, with RANK/WORLD_SIZE set");
  cmd->add_flag("--no-tag", a->no_tag, "With --all: do not prefix lines with [host]");
  cmd->add_flag("--json", a->keep_output,
                "With --all: one JSON object at the end, each host's exit status and output "
                "(stdout and stderr as written) instead of the tagged lines");
  cmd->add_option("--on", a->on, kOnHelp);
  cmd->add_option("--clock", a->clock,
                  "fabric: the command's own clocks, sleeps and timeouts run in the real "
                  "fabric's time (a dilated lab; libfaketime); wall: the machine's. Default: "
                  "the scenario's hosts.clock")
      ->check(CLI::IsMember({"fabric", "wall"}));
  cmd->callback([a, &cl] {
    // CLI11 keeps the "--" separator among the positionals.
    if (!a->argv.empty() && a->argv.front() == "--") a->argv.erase(a->argv.begin());
    cl.exit = cmd_exec(*a, cl.base);
  });
}

}  // namespace fabemu::cli
