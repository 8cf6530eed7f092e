// `rsh`: mpirun's remote shell inside a lab, parsed by hand before CLI11 (main.cpp).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "runtime/spawn.h"

namespace fabemu::cli {

int cmd_rsh(const std::vector<std::string>& args) {
  LabPaths paths;
  size_t at = 0;
  if (args.size() > 1 && args[0] == "--run-dir") {
    paths.run_root = args[1];
    at = 2;
  }
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::printf(
        "Usage: fabemu rsh [--run-dir DIR] LAB HOST COMMAND...\n\n"
        "mpirun's remote shell inside a lab, as sshd would be: enters HOST (its namespaces, /tmp\n"
        "and cgroup) and runs the words, joined, by /bin/sh -c. Your own MPI program across the\n"
        "lab's hosts, started from one of them:\n\n"
        "  fabemu exec LAB:h1 -- mpirun --allow-run-as-root -np 4 --host h1,h2,h3,h4 \\\n"
        "      --mca plm_rsh_agent 'fabemu rsh LAB' --mca plm_rsh_no_tree_spawn 1 \\\n"
        "      --mca routed direct --mca pml ob1 --mca btl tcp,self ./my_mpi_program\n\n"
        "no_tree_spawn and routed direct: every daemon is started by mpirun and talks to it\n"
        "(Open MPI's default tree of daemons would start daemons from other hosts).\n");
    return kExitOk;
  }
  if (args.size() < at + 3) {
    print_error(
        "rsh: usage: fabemu rsh [--run-dir DIR] LAB HOST COMMAND... (mpirun's agent; fabemu rsh "
        "--help)");
    return kExitBadInput;
  }
  paths.lab = args[at];
  auto model = session::open_lab(paths);
  if (!model) return report_error(model.error());
  const int id = model->topo.find(args[at + 1]);
  if (id < 0 || model->topo.nodes[id].role != Role::Host) {
    print_error("rsh: lab " + paths.lab + " has no host named '" + args[at + 1] + "'");
    return kExitBadInput;
  }
  std::string command;
  for (size_t i = at + 2; i < args.size(); ++i) command += (command.empty() ? "" : " ") + args[i];
  Error e = exec_in_node(node_context(*model, paths, id), {"/bin/sh", "-c", command});
  print_error(e.what());
  return 127;
}

void add_rsh_help(CLI::App& app) {
  // Handled before parsing (its words are a remote command line); listed here for --help.
  app.add_subcommand("rsh",
                     "mpirun's remote shell, no sshd: `fabemu exec LAB:h1 -- mpirun --mca "
                     "plm_rsh_agent 'fabemu rsh LAB' --mca plm_rsh_no_tree_spawn 1 --mca routed "
                     "direct --host h1,h2,... PROGRAM` starts a daemon in every host (`fabemu rsh "
                     "--help`)");
}

}  // namespace fabemu::cli
