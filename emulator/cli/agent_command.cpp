// `fabemu agent`: what a launcher (runtime/launcher.h) starts on every machine of a lab across
// machines (session::agent). Its answer is JSON on standard output (reach: the pairs as lines;
// errors in words on standard error, with the exit codes of the other commands), so that nothing
// of it depends on what started it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"

namespace fabemu::cli {

void add_agent_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    session::AgentRequest agent;
    std::string machines;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  session::AgentRequest& agent = a->agent;
  auto* cmd = app.add_subcommand("agent", "One machine's part of a lab across machines");
  cmd->group("");
  cmd->add_option("action", agent.action, "probe, up, reach or run")->required();
  cmd->add_option("scenario", agent.up.scenario, "probe, up: the scenario file");
  cmd->add_option("--lab", agent.up.lab, "Lab name");
  cmd->add_option("--machines", a->machines, "The allocation's machines, m1,m2,...");
  cmd->add_option("--shared-dir", agent.up.shared_dir, "The directory every machine sees");
  cmd->add_option("--pool", agent.up.pool, "up: the address pool the machines agreed on");
  cmd->add_option("--time-scale", agent.up.time_scale, "probe, up: as `up`'s");
  cmd->add_flag("--accept-degraded", agent.up.accept_degraded, "probe, up: as `up`'s");
  cmd->add_option("--run-id", agent.run_id, "run: the Gloo rendezvous prefix");
  cmd->add_option("--start-at", agent.start_at_ns, "run: the start, ns of CLOCK_REALTIME");
  cmd->add_option("--out", agent.out, "run: the directory for the machine's part");
  cmd->add_flag("--json", a->json, "The answer is JSON already (docs/cluster.md); accepted");
  cmd->callback([a, &cl] {
    const std::string& m = a->machines;
    for (size_t at = 0; !m.empty() && at <= m.size();) {
      const size_t comma = std::min(m.find(',', at), m.size());
      a->agent.up.cluster.push_back(m.substr(at, comma - at));
      at = comma + 1;
    }
    a->agent.lab = a->agent.up.lab;
    TerminalObserver observer(/*quiet=*/false);  // the probes' lines, on standard error
    auto answer = session::agent(a->agent, cl.base, observer);
    if (!answer) {
      cl.exit = report_error(answer.error());
      return;
    }
    std::fputs(answer->c_str(), stdout);
    cl.exit = kExitOk;
  });
}

}  // namespace fabemu::cli
