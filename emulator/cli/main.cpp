// fabemu command line: each command registers itself (its file's add_*_command); main parses
// and returns the exit code of the command that ran.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "util/cleanup_failure.h"

using namespace fabemu;

namespace fabemu::cli {

std::vector<std::string> CommandLine::without(const std::string& word) const {
  std::vector<std::string> out;
  for (const std::string& a : argv)
    if (a != word) out.push_back(a);
  return out;
}

}  // namespace fabemu::cli

int main(int argc, char** argv) {
  // mpirun's rsh agent: `fabemu rsh [--run-dir DIR] LAB HOST WORDS...`, parsed by hand because
  // the words are a remote command line full of options of its own.
  if (argc >= 2 && std::string_view(argv[1]) == "rsh")
    return cli::cmd_rsh(std::vector<std::string>(argv + 2, argv + argc));
  // What a destructor below could not undo is said here, as every error is.
  set_cleanup_failure_handler([](const std::string& what) { cli::print_error(what); });
  CLI::App app{
      "fabemu: emulate an AI cluster fabric in the kernel (namespaces, routed Clos, ECMP).\n"
      "Exit codes: 0 ok, 1 failed, 2 bad input, 3 no such lab, 4 needs root, 5 not possible on "
      "this machine; `exec` returns the command's own."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fabemu " FABEMU_VERSION);
  cli::CommandLine cl;
  cl.argv.assign(argv + 1, argv + argc);
  app.add_option("--run-dir", cl.base.run_root, "Where labs keep their journals")
      ->capture_default_str()
      ->group("");
  for (auto add :
       {cli::add_up_command, cli::add_down_command, cli::add_status_command, cli::add_exec_command,
        cli::add_link_command, cli::add_host_command, cli::add_perf_command})
    add(app, cl);
  cli::add_rsh_help(app);
  for (auto add : {cli::add_predict_command, cli::add_doctor_command, cli::add_run_command,
                   cli::add_agent_command, cli::add_graph_command, cli::add_capture_command,
                   cli::add_metrics_command, cli::add_top_command})
    add(app, cl);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? cli::kExitOk : cli::kExitBadInput;
  }
  return cl.exit;
}
