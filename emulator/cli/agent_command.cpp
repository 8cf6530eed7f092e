// `fabemu agent`: what a launcher (runtime/launcher.h) starts on every machine of a lab across
// machines. Each action works on this machine's part only and answers in JSON on standard
// output (errors in words on standard error, with the exit codes of the other commands), so
// that nothing of it depends on what started it.
#include <time.h>
#include <CLI/CLI.hpp>
#include <memory>

#include <chrono>
#include <cstdio>

#include "apply/kernel_backend.h"
#include "apply/link_control.h"
#include "apply/run_root.h"
#include "cli/commands.h"
#include "report/run_part.h"
#include "runtime/cluster.h"
#include "util/files.h"
#include "util/json.h"

namespace fabemu::cli {
namespace {

using Clock = std::chrono::steady_clock;

void reply(const Json& j) {
  std::printf("%s\n", json_text(j).c_str());
}

// Which pools are free here, whether the lab exists, the time scale this machine's part needs:
// what the launcher agrees on before any machine builds.
int agent_probe(const UpArgs& args, const LabPaths& base) {
  auto prep = prepare(args, base);
  if (auto* code = std::get_if<int>(&prep)) return *code;
  auto& p = std::get<Prepared>(prep);
  const MachinePart& part = *p.model.part;
  reply({{"machine", part.machines[part.index]},
         {"index", part.index},
         {"underlay_dev", part.underlay_dev},
         {"free_pools", free_pools(p.paths)},
         {"lab_exists", path_exists(p.paths.run_dir())},
         {"time_scale", p.model.time_scale.factor},
         {"time_scale_why", p.model.time_scale_why},
         {"notes", p.notes}});
  return kExitOk;
}

int agent_up(const UpArgs& args, const LabPaths& base) {
  const auto start = Clock::now();
  auto prep = prepare(args, base);
  if (auto* code = std::get_if<int>(&prep)) return *code;
  auto& p = std::get<Prepared>(prep);
  auto lock = AgentLock::take(base.run_root, p.paths.lab);
  if (!lock) {
    print_error(lock.error().what());
    return kExitFailed;
  }
  if (auto made = make_dirs(p.model.part->shared_dir + "/" + p.paths.lab, 0777); !made) {
    print_error(made.error().context("the directory every machine shares").what());
    return kExitFailed;
  }
  auto backend = KernelBackend::create(p.paths.netns_dir);
  if (!backend) {
    print_error(backend.error().what());
    return kExitFailed;
  }
  UpOptions opts{p.text, args.scenario, nullptr, p.plan};
  opts.time_scale = p.model.time_scale;
  opts.time_scale_why = p.model.time_scale_why;
  opts.part = p.model.part;
  opts.pool = args.pool;
  auto up = lab_up(p.scenario, p.paths, **backend, opts);
  if (!up) {
    print_error(up.error().what());
    return kExitFailed;
  }
  const LabModel& m = up->model;
  int hosts = 0, switches = 0, tunnels = 0;
  for (size_t n = 0; n < m.topo.nodes.size(); ++n)
    if (local_node(m, static_cast<int>(n)))
      ++(m.topo.nodes[n].role == Role::Host ? hosts : switches);
  for (const Link& l : m.topo.links) tunnels += local_node(m, l.a.node) != local_node(m, l.b.node);
  Json phases = Json::object();
  for (const auto& [phase, secs] : up->phase_seconds) phases[phase] = secs;
  // The notes count ports, bridges and devices of the whole lab, the same on every machine.
  UpResult whole = *up;
  LabModel all = m;
  all.part.reset();
  const Plan lab_plan = make_plan(all, p.paths, *args.pool, up->plan_options);
  whole.plan.shaped_ports = lab_plan.shaped_ports;
  whole.plan.ovs_bridges = lab_plan.ovs_bridges;
  whole.plan.rxe_devices = lab_plan.rxe_devices;
  std::vector<std::string> notes = up_notes(p.scenario, whole);
  notes.insert(notes.end(), p.notes.begin(), p.notes.end());
  reply({{"machine", m.part->machines[m.part->index]},
         {"seconds", seconds_since(start)},
         {"hosts", hosts},
         {"switches", switches},
         {"tunnels", tunnels},
         {"routes", up->plan.routes},
         {"phases", phases},
         {"notes", notes}});
  return kExitOk;
}

// ICMP from this machine's hosts to every host of the lab.
int agent_reach(const LabPaths& paths) {
  auto m = lab_model(paths);
  if (!m) return lab_error(m.error());
  auto reach = check_reachability(*m, paths);
  if (!reach) {
    print_error(reach.error().what());
    return kExitFailed;
  }
  std::printf("%s", pairs_text(reach->pairs).c_str());
  return kExitOk;
}

// This machine's ranks, faults and telemetry from the common start; its part of the report
// into `out` (standard output carries the programs' own output).
int agent_run(const AgentArgs& a, const LabPaths& paths) {
  auto lock = AgentLock::take(paths.run_root, paths.lab);
  if (!lock) {
    print_error(lock.error().what());
    return kExitFailed;
  }
  JournalFile journal;
  auto m = lab_model(paths, &journal);
  if (!m) return lab_error(m.error());
  // Exec steps start in the directory of the scenario the lab was built from.
  WorkloadOptions wo = workload_options(journal.scenario_file);
  wo.run_id = a.run_id;
  if (auto staged = stage_binaries(wo, paths); !staged) {
    print_error(staged.error().what());
    return kExitFailed;
  }
  // The launcher's start on the real-time clock, on this machine's monotonic one.
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const int64_t now_ns = int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
  const auto t0 = Clock::now() + std::chrono::nanoseconds(a.start_at_ns - now_ns);
  RunReport part;
  if (auto mode = read_link_mode(paths)) part.link_mode = *mode;
  session::Observer silent;  // the launcher prints the steps, from every machine's part
  session::play_workload(*m, paths, wo, t0, part, silent);
  const std::string out = a.out + "/part-" + std::to_string(m->part ? m->part->index : 0) + ".json";
  if (auto w = write_file(out, run_part_text(part)); !w) {
    print_error(w.error().what());
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

int cmd_agent(const AgentArgs& a, const LabPaths& base) {
  if (!require_root("agent")) return kExitNeedsRoot;
  LabPaths paths = base;
  paths.lab = a.lab;
  if (a.action == "probe") return agent_probe(a.up, base);
  if (a.action == "up") return agent_up(a.up, base);
  if (a.action == "reach") return agent_reach(paths);
  if (a.action == "run") return agent_run(a, paths);
  print_error("agent: unknown action '" + a.action + "'; valid: probe, up, reach, run");
  return kExitBadInput;
}

void add_agent_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    AgentArgs agent;
    std::string machines;
  };
  auto a = std::make_shared<Args>();
  AgentArgs& agent = a->agent;
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
  cmd->callback([a, &cl] {
    const std::string& m = a->machines;
    for (size_t at = 0; !m.empty() && at <= m.size();) {
      const size_t comma = std::min(m.find(',', at), m.size());
      a->agent.up.cluster.push_back(m.substr(at, comma - at));
      at = comma + 1;
    }
    a->agent.lab = a->agent.up.lab;
    cl.exit = cmd_agent(a->agent, cl.base);
  });
}

}  // namespace fabemu::cli
