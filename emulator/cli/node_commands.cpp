// `exec`, `rsh` and `doctor`, and the helpers every command shares.
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <memory>

#include <cstdio>
#include <map>

#include "apply/lab.h"
#include "cli/commands.h"
#include "doctor/probe.h"
#include "runtime/host_faults.h"
#include "runtime/spawn.h"
#include "util/json.h"

namespace fabemu::cli {

void print_error(const std::string& message) {
  std::fprintf(stderr, "fabemu: %s\n", message.c_str());
}

int lab_error(const Error& e) {
  print_error(e.what());
  return errno_of(e) == ENOENT ? kExitNoLab : kExitFailed;
}

bool require_root(const char* command) {
  if (::geteuid() == 0) return true;
  print_error(std::string(command) +
              " needs root (namespaces, veths and routes are kernel objects): run it with sudo");
  return false;
}

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

int cmd_doctor(bool json, bool calibrate, const std::string& run_root) {
  TerminalObserver observer(/*quiet=*/false);  // calibration's trials, on stderr
  const session::DoctorOutcome d = session::doctor(calibrate, run_root, observer);
  if (json)
    print_json(d.to_json());
  else
    std::printf("%s", format_doctor_table(d.kernel, d.probes).c_str());
  return kExitOk;
}

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
  auto model = lab_model(paths);
  if (!model) return lab_error(model.error());
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

int cmd_host(const session::HostRequest& req, bool json, const LabPaths& base) {
  auto done = session::host_fault(req, base);
  if (!done) return report_error(done.error());
  if (json)
    print_json(done->to_json());
  else
    std::printf("%s %s: %s\n", req.lab.c_str(), req.host.c_str(), done->detail.c_str());
  return kExitOk;
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

void add_host_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    session::HostRequest req;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("host", "Host faults on a running lab, by hand");
  cmd->require_subcommand(1);
  for (auto [name, help] :
       {std::pair{"crash", "Kill every process in the host at once, links down"},
        {"restart", "Bring a crashed host's links back up"},
        {"freeze", "Stop every task of the host (cgroup freezer)"},
        {"thaw", "Let a frozen host run again"}}) {
    auto* c = cmd->add_subcommand(name, help);
    c->add_option("lab", a->req.lab, "Lab name")->required();
    c->add_option("host", a->req.host, "Host name, e.g. h3")->required();
    c->add_flag("--json", a->json, "The result as one JSON object (docs/json.md)");
    c->callback([a, &cl, action = std::string(name)] {
      a->req.action = action;
      cl.exit = cmd_host(a->req, a->json, cl.base);
    });
  }
}

void add_rsh_help(CLI::App& app) {
  // Handled before parsing (its words are a remote command line); listed here for --help.
  app.add_subcommand("rsh",
                     "mpirun's remote shell, no sshd: `fabemu exec LAB:h1 -- mpirun --mca "
                     "plm_rsh_agent 'fabemu rsh LAB' --mca plm_rsh_no_tree_spawn 1 --mca routed "
                     "direct --host h1,h2,... PROGRAM` starts a daemon in every host (`fabemu rsh "
                     "--help`)");
}

void add_doctor_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    bool json = false, calibrate = false, vm = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("doctor", "What this kernel and machine can emulate");
  cmd->add_flag("--json", a->json, "The result as one JSON object (docs/json.md)");
  cmd->add_flag("--calibrate", a->calibrate,
                "Measure how much emulated traffic this machine carries in real time (a small "
                "lab, ~30 s), as time_scale: auto does once per boot");
  cmd->add_flag("--vm", a->vm, kVmHelp);
  cmd->callback([a, &cl] {
    cl.exit = a->vm ? cmd_in_vm(cl.without("--vm"), "")
                    : cmd_doctor(a->json, a->calibrate, cl.base.run_root);
  });
}

}  // namespace fabemu::cli
