// fabemu command line: parses arguments (CLI11) and dispatches to the commands.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

using namespace fabemu;

int main(int argc, char** argv) {
  CLI::App app{
      "fabemu: emulate an AI cluster fabric in the kernel (namespaces, routed Clos, ECMP).\n"
      "Exit codes: 0 ok, 1 failed, 2 bad input, 3 no such lab, 4 needs root; `exec` returns "
      "the command's own."};
  app.require_subcommand(1);
  LabPaths base;
  app.add_option("--run-dir", base.run_root, "Where labs keep their journals")
      ->capture_default_str()
      ->group("");

  cli::UpArgs up;
  auto* up_cmd = app.add_subcommand("up", "Build the fabric of a scenario and leave it running");
  up_cmd->add_option("scenario", up.scenario, "Scenario YAML file")->required();
  up_cmd->add_option("--lab", up.lab, "Lab name (default: the scenario's name)");
  up_cmd->add_flag("--dry-run", up.dry_run, "Print the plan; touch nothing");
  up_cmd->add_flag("-q,--quiet", up.quiet, "No progress output");
  up_cmd->add_flag("--timings", up.timings, "Print the time each phase took");

  std::vector<std::string> down_labs;
  bool down_all = false;
  auto* down_cmd = app.add_subcommand("down", "Remove a lab (also after a crash)");
  down_cmd->add_option("lab", down_labs, "Lab names");
  down_cmd->add_flag("--all", down_all, "Every fabemu lab on this machine");

  std::string status_lab;
  bool status_json = false;
  auto* status_cmd = app.add_subcommand("status", "Nodes, links, addresses and counters of a lab");
  status_cmd->add_option("lab", status_lab, "Lab name (none: list labs)");
  status_cmd->add_flag("--json", status_json, "Machine-readable output");

  std::string exec_target;
  std::vector<std::string> exec_argv;
  bool exec_all = false, exec_no_tag = false;
  auto* exec_cmd = app.add_subcommand(
      "exec",
      "Run a command inside an emulated node: exec LAB:NODE -- CMD, or exec LAB --all -- CMD");
  exec_cmd->add_option("target", exec_target, "LAB:NODE, or LAB with --all")->required();
  exec_cmd->add_option("command", exec_argv, "Command and arguments, after --")->required();
  exec_cmd->add_flag("--all", exec_all, "One process per host, with RANK/WORLD_SIZE set");
  exec_cmd->add_flag("--no-tag", exec_no_tag, "With --all: do not prefix lines with [host]");

  bool doctor_json = false;
  auto* doctor_cmd = app.add_subcommand("doctor", "What this kernel and machine can emulate");
  doctor_cmd->add_flag("--json", doctor_json, "Machine-readable output");

  cli::UpArgs run;
  bool run_keep = false;
  auto* run_cmd =
      app.add_subcommand("run", "Build the fabric, check it, run the workload, report, tear down");
  run_cmd->add_option("scenario", run.scenario, "Scenario YAML file")->required();
  run_cmd->add_option("--lab", run.lab, "Lab name (default: the scenario's name)");
  run_cmd->add_flag("--keep", run_keep, "Leave the lab up afterwards");
  run_cmd->add_flag("-q,--quiet", run.quiet, "No progress output");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? cli::kExitOk : cli::kExitBadInput;
  }

  if (up_cmd->parsed()) return cli::cmd_up(up, base);
  if (down_cmd->parsed()) return cli::cmd_down(down_labs, down_all, base);
  if (status_cmd->parsed()) return cli::cmd_status(status_lab, status_json, base);
  // CLI11 keeps the "--" separator among the positionals.
  if (!exec_argv.empty() && exec_argv.front() == "--") exec_argv.erase(exec_argv.begin());
  if (exec_cmd->parsed()) return cli::cmd_exec(exec_target, exec_all, exec_no_tag, exec_argv, base);
  if (doctor_cmd->parsed()) return cli::cmd_doctor(doctor_json);
  if (run_cmd->parsed()) return cli::cmd_run(run, run_keep, base);
  return cli::kExitBadInput;
}
