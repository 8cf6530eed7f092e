// `up`, `down` and `run`: scenario checks before anything is touched, then the lab lifecycle.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "apply/journal.h"
#include "apply/kernel_backend.h"
#include "apply/lab.h"
#include "apply/netns_cleanup.h"
#include "apply/run_root.h"
#include "cli/commands.h"
#include "doctor/capabilities.h"
#include "doctor/system_probe.h"
#include "plan/partition.h"
#include "runtime/cluster.h"
#include "runtime/faults.h"
#include "scenario/loader.h"
#include "util/files.h"
#include "util/netlink.h"
#include "util/units.h"

namespace fabemu::cli {
namespace {

using Clock = std::chrono::steady_clock;

Progress terminal_progress(bool quiet) {
  if (quiet || !::isatty(STDERR_FILENO)) return nullptr;
  return [](std::string_view phase, size_t done, size_t total) {
    if (phase == "done") {
      std::fprintf(stderr, "\r\033[K");
      return;
    }
    std::fprintf(stderr, "\r\033[K  %.*s %zu/%zu actions", static_cast<int>(phase.size()),
                 phase.data(), done, total);
  };
}

}  // namespace

std::vector<std::string> up_notes(const Scenario& s, const UpResult& up) {
  std::vector<std::string> out;
  const PlanOptions& mode = up.plan_options;
  if (const TimeScale& t = up.model.time_scale; t.dilated()) {
    const std::string n = format_factor(t.factor);
    out.push_back("time dilated x" + n + ": links run at rate / " + n + ", delays x " + n +
                  "; every figure below is the real fabric's (" + up.model.time_scale_why + ")");
    if (const auto rto = host_rto_min_ms(up.model))
      out.push_back("hosts' TCP RTO floor " + format_time_ns(uint64_t{*rto} * 1'000'000) +
                    " of wall clock (" + (*rto >= kMaxRtoMs ? "Linux's 120 s maximum; " : "") +
                    "real " + format_time_ns(s.hosts.tcp_rto_min_ns.value_or(kLinuxRtoMinNs)) +
                    ")");
    if (s.hosts.clock == HostClock::Fabric)
      out.push_back(
          "hosts' programs run on the real fabric's clock (hosts.clock: fabric): "
          "their sleeps and timeouts last " +
          n + " times longer in wall clock; `exec --clock wall` for one that should not");
  }
  if (up.plan.shaped_ports == 0)
    out.push_back("links unshaped (veth speed); `fabemu link set` shapes one live");
  else
    out.push_back(link_model_text(mode, up.plan.shaped_ports,
                                  s.fabric.lossless && s.fabric.lossless->hold_queue));
  if (up.plan.ovs_bridges) {
    const OvsChoice& ovs = mode.ovs;
    out.push_back("switches: " + std::to_string(up.plan.ovs_bridges) + " Open vSwitch bridges (" +
                  (ovs.kernel ? "kernel datapath"
                              : "userspace datapath, " + ovs.why_userspace +
                                    "; offloads off on every switch link") +
                  "); `fabemu exec LAB:SWITCH -- ovs-ofctl dump-flows SWITCH`");
  }
  if (up.plan.bgp_routers) {
    double converge = 0;
    for (const auto& [phase, secs] : up.phase_seconds)
      if (phase == "bgp" || phase == "converge") converge += secs;
    const auto& bfd = s.fabric.bfd;
    size_t routes = 0;
    for (const BgpRouter& r : up.model.bgp) routes += r.fib.size();
    out.push_back("routing: eBGP (FRR) on " + std::to_string(up.plan.bgp_routers) + " switches, " +
                  (bfd ? "BFD every " + format_time_ns(bfd->interval_ns) + " x " +
                             std::to_string(bfd->multiplier)
                       : std::string("no BFD")) +
                  printf_string("; started and converged to the %zu planned routes in %.2f s",
                                routes, converge) +
                  "; `fabemu exec LAB:SWITCH -- vtysh -c 'show bgp summary'`");
  }
  if (up.plan.rxe_devices)
    out.push_back("rdma: rxe on " + std::to_string(up.plan.rxe_devices) +
                  " hosts (fabemu-LAB-HOST on each host's NIC, RoCEv2 GID index 1); `fabemu "
                  "perf` runs perftest between two");
  else if (s.rdma == RdmaMode::Auto)
    out.push_back("rdma: auto: off (" + mode.rdma.why_not + ")");
  return out;
}

std::variant<Prepared, int> prepare(const UpArgs& args, const LabPaths& base) {
  auto sc = load_scenario_file(args.scenario);
  if (!sc) {
    print_error(sc.error().what());
    return kExitBadInput;
  }
  auto text = read_file(args.scenario);
  if (!text) {
    print_error(text.error().what());
    return kExitBadInput;
  }
  Prepared p{std::move(*sc), std::move(*text), base};
  p.paths.lab = args.lab.empty() ? p.scenario.name : args.lab;
  if (!is_valid_lab_name(p.paths.lab)) {
    print_error("--lab: '" + p.paths.lab + "' is not a lab name: 1-12 of a-z, 0-9 and '-'");
    return kExitBadInput;
  }
  auto model = build_model(p.scenario, 0);
  if (!model) {
    print_error(model.error().what());
    return kExitBadInput;
  }
  p.model = std::move(*model);
  // A partition's dry run needs nothing of this machine's kernel.
  if (args.dry_run && args.machines > 0) return p;
  if (!args.cluster.empty()) {
    // This machine's part: the same placement on every machine, its own nodes built here.
    auto placement = partition(p.model, static_cast<int>(args.cluster.size()));
    if (!placement) {
      print_error(p.scenario.file + ": " + placement.error().what());
      return kExitBadInput;
    }
    auto part = this_machine_part(args.cluster, args.shared_dir);
    if (!part) {
      print_error(part.error().what());
      return kExitFailed;
    }
    part->placement = std::move(*placement);
    auto mtu = underlay_mtu(*part);
    if (!mtu) {
      print_error(mtu.error().what());
      return kExitFailed;
    }
    // A cut link's frames travel in VXLAN: fabric MTU + its headers must fit the underlay.
    if (p.scenario.fabric.mtu + kVxlanOverhead > *mtu) {
      print_error(printf_string(
          "%s: fabric mtu %u + %u bytes of VXLAN headers does not fit the underlay's MTU %u "
          "(%s on %s): raise the underlay's MTU (jumbo frames) or lower fabric.mtu to %u",
          p.scenario.file.c_str(), p.scenario.fabric.mtu, kVxlanOverhead, *mtu,
          part->underlay_dev.c_str(), part->machines[part->index].c_str(), *mtu - kVxlanOverhead));
      return kExitBadInput;
    }
    p.model.part = std::move(*part);
  }
  // What this kernel can do, asked as the doctor asks it (verdicts kept for the boot).
  SystemProbe probe(base.run_root, /*fresh=*/false);
  Capabilities caps(probe);
  ChoiceOptions choice;
  choice.accept_degraded = args.accept_degraded;
  choice.rps_mask = cpu_mask(static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_CONF))));
  auto options = choose_plan_options(p.model, caps, choice);
  if (!options) {
    print_error(p.scenario.file + ": " + options.error().message);
    return errno_of(options.error()) == EOPNOTSUPP ? kExitUnsupported : kExitFailed;
  }
  p.plan = std::move(*options);
  p.plan.netns_names =
      args.netns_names || p.model.topo.nodes.size() <= static_cast<size_t>(kNetnsNamesUpTo);
  // The kernel's one ARP table's limit (init_net's is the table's).
  if (auto text = read_file("/proc/sys/net/ipv4/neigh/default/gc_thresh3"))
    p.plan.neighbour_limit = std::atoi(text->c_str());
  probe.progress = [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); };
  auto scale = choose_time_scale(p.model, args.time_scale, caps);
  if (!scale) {
    print_error(p.scenario.file + ": " + scale.error().message);
    return errno_of(scale.error()) == EOPNOTSUPP ? kExitUnsupported
           : errno_of(scale.error()) == EINVAL   ? kExitBadInput
                                                 : kExitFailed;
  }
  p.model.time_scale = scale->scale;
  p.model.time_scale_why = scale->why;
  p.notes = std::move(scale->notes);
  return p;
}

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

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int bring_up(const UpArgs& args, const LabPaths& base, std::optional<UpResult>& out,
             LabPaths& paths) {
  auto prep = prepare(args, base);
  if (auto* code = std::get_if<int>(&prep)) return *code;
  auto& p = std::get<Prepared>(prep);
  paths = p.paths;

  if (args.dry_run && args.machines > 0) return print_partition(p.model, args.machines);
  if (args.dry_run) {
    Plan plan = make_plan(p.model, p.paths, 0, p.plan);
    for (const auto& e : plan.journal) std::printf("journal %s\n", e.path.c_str());
    for (const auto& a : plan.actions) std::printf("%s\n", describe(a).c_str());
    std::printf("# %d namespaces, %d veths, %d routes, %zu actions\n", plan.namespaces, plan.veths,
                plan.routes, plan.actions.size());
    return kExitOk;
  }
  if (!require_root("up")) return kExitNeedsRoot;
  auto backend = KernelBackend::create(p.paths.netns_dir);
  if (!backend) {
    print_error(backend.error().what());
    return kExitFailed;
  }
  auto start = Clock::now();
  UpOptions opts{p.text, args.scenario, terminal_progress(args.quiet), p.plan};
  opts.time_scale = p.model.time_scale;
  opts.time_scale_why = p.model.time_scale_why;
  auto up = lab_up(p.scenario, p.paths, **backend, opts);
  if (!up) {
    print_error(up.error().what());
    return kExitFailed;
  }
  const LabModel& m = up->model;
  std::printf("lab %s up in %.2f s: %d hosts, %zu switches, %zu links, %d routes (addresses %s)\n",
              p.paths.lab.c_str(), seconds_since(start), m.topo.host_count(),
              m.topo.switches().size(), m.topo.links.size(), up->plan.routes,
              m.addresses.pool.str().c_str());
  if (args.timings)
    for (const auto& [phase, secs] : up->phase_seconds)
      std::printf("  %-10s %.3f s\n", phase.c_str(), secs);
  if (!args.quiet) {  // -q: the summary line (and --timings) only
    for (const auto& n : up_notes(p.scenario, *up)) std::printf("  note: %s\n", n.c_str());
    for (const auto& n : p.notes) std::printf("  note: %s\n", n.c_str());
  }
  out = std::move(*up);
  return kExitOk;
}

int cmd_up(const UpArgs& args, const LabPaths& base) {
  std::optional<UpResult> up;
  LabPaths paths;
  int code = bring_up(args, base, up, paths);
  if (code != kExitOk || args.dry_run) return code;
  if (args.quiet) return kExitOk;
  if (const std::string note = fault_timeline_note(up->model); !note.empty())
    std::printf("  note: %s (`fabemu run` plays them; a lab brought up by `up` does not)\n",
                note.c_str());
  const auto hosts = up->model.topo.hosts();
  std::printf("  try: fabemu exec %s:%s -- ping -c3 %s\n", paths.lab.c_str(),
              up->model.topo.nodes[hosts.front()].name.c_str(),
              up->model.topo.nodes[hosts.back()].name.c_str());
  std::printf("       fabemu status %s; fabemu down %s\n", paths.lab.c_str(), paths.lab.c_str());
  return kExitOk;
}

int cmd_down(const std::vector<std::string>& labs_in, bool all, const LabPaths& base,
             bool wait_for_kernel) {
  if (labs_in.empty() && !all) {
    print_error("down: name a lab, or --all");
    return kExitBadInput;
  }
  if (!require_root("down")) return kExitNeedsRoot;
  std::vector<std::string> labs = all ? list_labs(base.run_root) : labs_in;
  auto backend = KernelBackend::create(base.netns_dir);
  if (!backend) {
    print_error(backend.error().what());
    return kExitFailed;
  }
  int code = kExitOk;
  size_t taken_down = 0;
  // The kernel frees the namespaces afterwards, under the lock a next lab's `up` needs: wait,
  // so that the next lab comes up as fast as a first (and the lab's memory is back).
  std::optional<NetnsCleanupWatch> watch;
  if (wait_for_kernel) {
    auto w = NetnsCleanupWatch::create();
    if (w)
      watch.emplace(std::move(*w));
    else
      std::fprintf(stderr, "fabemu: down: cannot wait for the kernel to free the lab: %s\n",
                   describe(w.error()).c_str());
  }
  for (const auto& lab : labs) {
    LabPaths paths = base;
    paths.lab = lab;
    // An agent still building or running this machine's part of the lab stops first.
    if (auto stopped = stop_agent(base.run_root, lab); !stopped) {
      print_error(stopped.error().what());
      code = kExitFailed;
      continue;
    } else if (*stopped) {
      std::printf("lab %s: stopped the agent still working on it here\n", lab.c_str());
    }
    if (!all && !path_exists(paths.run_dir())) {
      print_error("down: no lab named '" + lab + "'");
      code = std::max(code, kExitNoLab);
      continue;
    }
    auto start = Clock::now();
    if (auto r = lab_down(paths, **backend, watch ? &*watch : nullptr); !r) {
      print_error(r.error().what());
      code = kExitFailed;
      continue;
    }
    std::printf("lab %s down in %.2f s\n", lab.c_str(), seconds_since(start));
    ++taken_down;
  }
  if (taken_down > 0 && watch) {
    auto start = Clock::now();
    if (auto r = watch->wait(std::chrono::seconds(60)); !r)
      std::fprintf(stderr, "fabemu: down: not waiting for the kernel any longer: %s\n",
                   describe(r.error()).c_str());
    else
      std::printf("kernel done freeing %s in %.2f s\n", taken_down > 1 ? "the labs" : "the lab",
                  seconds_since(start));
  }
  return code == kExitNoLab && labs.size() > 1 ? kExitFailed : code;
}

}  // namespace fabemu::cli
