// `up` (session::up_lab) as the terminal shows it; `up --dry-run`.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "apply/lab.h"
#include "cli/commands.h"
#include "plan/partition.h"
#include "runtime/faults.h"
#include "util/units.h"

namespace fabemu::cli {

namespace {

// `up --dry-run --machines M`: where each node would be built and what crosses machines.
int print_partition(const LabModel& m, int machines) {
  auto p = partition(m, machines);
  if (!p) {
    print_error(p.error().what());
    return kExitBadInput;
  }
  const Topology& t = m.topo;
  const auto loads = machine_loads(m, *p);
  std::printf("%-8s %6s %9s %6s %9s %12s  %s\n", "MACHINE", "HOSTS", "SWITCHES", "LINKS",
              "CUT ENDS", "DEMAND", "NODES");
  for (int mi = 0; mi < machines; ++mi) {
    const MachineLoad& l = loads[mi];
    std::printf("%-8d %6d %9d %6d %9d %12s  %s\n", mi, l.hosts, l.switches, l.links, l.cut_ends,
                l.demand > 0 ? printf_string("%.3g/s", l.demand).c_str() : "-",
                describe_nodes(t, p->nodes_of(mi)).c_str());
  }
  int hosts_min = t.host_count(), hosts_max = 0;
  for (const MachineLoad& l : loads) {
    hosts_min = std::min(hosts_min, l.hosts);
    hosts_max = std::max(hosts_max, l.hosts);
  }
  std::printf(
      "# %zu of %zu links cut (VXLAN tunnels between machines; %d with every upper switch where "
      "most of its neighbours are, which crowds them); hosts per machine %d..%d\n",
      p->cut_links.size(), t.links.size(), min_cut_links(m, *p), hosts_min, hosts_max);
  std::string cut;
  for (int l : p->cut_links) cut += (cut.empty() ? "" : " ") + link_name(t, t.links[l]);
  if (!cut.empty()) std::printf("cut: %s\n", cut.c_str());
  return kExitOk;
}

}  // namespace

void render_up(const session::UpOutcome& up, const UpArgs& args) {
  if (args.json) {
    print_json(up.to_json());
    return;
  }
  const LabModel& m = up.up.model;
  const Topology& t = m.topo;
  if (up.machines.empty()) {
    std::printf(
        "lab %s up in %.2f s: %d hosts, %zu switches, %zu links, %d routes (addresses %s)\n",
        up.lab.c_str(), up.seconds, t.host_count(), t.switches().size(), t.links.size(),
        up.up.plan.routes, m.addresses.pool.str().c_str());
  } else {
    std::printf(
        "lab %s up on %zu machines (%s) in %.2f s: %d hosts, %zu switches, %zu links (%d between "
        "machines, as VXLAN tunnels), %d routes (addresses %s)\n",
        up.lab.c_str(), up.machines.size(), up.launcher.c_str(), up.seconds, t.host_count(),
        t.switches().size(), t.links.size(), up.cut_links, up.up.plan.routes,
        m.addresses.pool.str().c_str());
    for (const auto& p : up.machines)
      std::printf("  %-10s %4d hosts %4d switches %4d tunnels, up in %.2f s: %s\n", p.name.c_str(),
                  p.hosts, p.switches, p.tunnels, p.seconds, p.nodes.c_str());
  }
  if (args.timings)
    for (const auto& [phase, secs] : up.up.phase_seconds)
      std::printf("  %-10s %.3f s\n", phase.c_str(), secs);
  if (!args.quiet)  // -q: the summary line (and --timings) only
    for (const auto& n : up.notes) std::printf("  note: %s\n", n.c_str());
}

namespace {

// `up --dry-run`: the plan, or with --machines the partition; nothing touched.
int dry_run(const UpArgs& args, const LabPaths& base) {
  TerminalObserver observer(args.quiet);
  auto prep = session::prepare(args, base, observer, args.machines > 0);
  if (!prep) return report_error(prep.error());
  if (args.machines > 0) return print_partition(prep->model, args.machines);
  Plan plan = make_plan(prep->model, prep->paths, 0, prep->plan);
  for (const auto& e : plan.journal) std::printf("journal %s\n", e.path.c_str());
  for (const auto& a : plan.actions) std::printf("%s\n", describe(a).c_str());
  std::printf("# %d namespaces, %d veths, %d routes, %zu actions\n", plan.namespaces, plan.veths,
              plan.routes, plan.actions.size());
  return kExitOk;
}

}  // namespace

int cmd_up(const UpArgs& args, const LabPaths& base) {
  if (args.dry_run) return dry_run(args, base);
  TerminalObserver observer(args.quiet);
  // ^C or a TERM while the lab is built: what was made goes again, exit 130 (143).
  session::InterruptGuard interrupt;
  auto up = session::up_lab(args, base, observer, &interrupt.signal());
  if (!up) return report_error(up.error());
  render_up(*up, args);
  if (args.quiet || args.json) return kExitOk;
  const LabModel& m = up->up.model;
  if (const std::string note = fault_timeline_note(m); !note.empty())
    std::printf("  note: %s (`fabemu run` plays them; a lab brought up by `up` does not)\n",
                note.c_str());
  const auto hosts = m.topo.hosts();
  const std::string on = args.on.empty() ? "" : " --on " + args.on;
  std::printf("  try: fabemu exec %s:%s%s -- ping -c3 %s\n", up->lab.c_str(),
              m.topo.nodes[hosts.front()].name.c_str(), on.c_str(),
              m.topo.nodes[hosts.back()].name.c_str());
  std::printf("       fabemu status %s%s; fabemu down %s%s\n", up->lab.c_str(), on.c_str(),
              up->lab.c_str(), on.c_str());
  return kExitOk;
}

void add_build_options(CLI::App* cmd, UpArgs& a) {
  cmd->add_option("scenario", a.scenario, "Scenario YAML file")->required();
  cmd->add_option("--lab", a.lab, "Lab name (default: the scenario's name)");
  cmd->add_flag("-q,--quiet", a.quiet,
                "No progress and no notes: the one-line summary (and --timings) only");
  cmd->add_flag("--accept-degraded", a.accept_degraded,
                "On a kernel without sch_fq, build anyway: links keep rate, loss and ECN "
                "(policer) but get no delay or jitter");
  cmd->add_option("--time-scale", a.time_scale,
                  "Run the fabric N times slower than the real one the scenario describes "
                  "(time dilation; every figure printed is the real fabric's), or auto: N "
                  "from this machine's calibrated capacity. Overrides the scenario's "
                  "time_scale");
  cmd->add_option("--on", a.on,
                  "slurm: spread the lab over the machines of this Slurm allocation (one "
                  "fabemu agent per machine, cut links as VXLAN tunnels; docs/cluster.md)");
  cmd->add_flag("--netns-names", a.netns_names,
                "Give `ip netns` a name for every node (/run/netns/fabemu-LAB-NODE), also in "
                "a lab of more than 128 namespaces (fabemu exec never needs them)");
}

void add_up_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    UpArgs up;
    bool vm = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("up", "Build the fabric of a scenario and leave it running");
  add_build_options(cmd, a->up);
  cmd->add_flag("--vm", a->vm, "Not for up: see run --vm");
  cmd->add_flag("--dry-run", a->up.dry_run, "Print the plan; touch nothing");
  cmd->add_option("--machines", a->up.machines,
                  "With --dry-run: how the lab would be spread over this many machines (the "
                  "nodes of each, the links cut into VXLAN tunnels, the load)")
      ->check(CLI::Range(1, 4096));
  cmd->add_flag("--timings", a->up.timings, "Print the time each phase took");
  cmd->add_flag("--json", a->up.json, "The result as one JSON object (docs/json.md)")
      ->excludes("--dry-run");
  cmd->callback([a, &cl] {
    if (a->vm) {
      print_error(
          "up --vm: a lab in the VM lives only as long as the command the VM runs; `fabemu run "
          "SCENARIO --vm` runs the whole job there, `scripts/vm-run -- CMD...` any commands");
      cl.exit = kExitBadInput;
      return;
    }
    cl.exit = cmd_up(a->up, cl.base);
  });
}

}  // namespace fabemu::cli
