// `host crash|restart|freeze|thaw`: host faults by hand (session::host_fault).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"

namespace fabemu::cli {

int cmd_host(const session::HostRequest& req, bool json, const LabPaths& base) {
  auto done = session::host_fault(req, base);
  if (!done) return report_error(done.error());
  if (json)
    print_json(done->to_json());
  else
    std::printf("%s %s: %s\n", req.lab.c_str(), req.host.c_str(), done->detail.c_str());
  return kExitOk;
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

}  // namespace fabemu::cli
