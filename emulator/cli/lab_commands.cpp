// `up`, `down` and `run`: scenario checks before anything is touched, then the lab lifecycle.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "apply/cgroup.h"
#include "apply/journal.h"
#include "apply/kernel_backend.h"
#include "apply/lab.h"
#include "apply/ovs.h"
#include "cli/commands.h"
#include "doctor/rxe_support.h"
#include "scenario/loader.h"
#include "shaping/port_setup.h"
#include "util/files.h"
#include "util/netns.h"

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

// What a scenario asks for that this version cannot do: refused before anything is touched.
std::optional<std::string> unsupported(const Scenario& s, const LabModel& m) {
  if (s.fabric.switch_kind == SwitchKind::Bridge)
    return "fabric.switch: 'bridge' is not implemented in this version; valid: router, ovs";
  if (s.fabric.switch_kind == SwitchKind::Ovs)
    if (auto tools = find_ovs_tools(); !tools) return "fabric.switch: ovs: " + tools.error().what();
  bool limits = false, slowed = false;
  for (const auto& n : m.topo.nodes) limits |= !n.limits.empty();
  for (const auto& f : s.faults) slowed |= !f.host.empty();
  if ((limits || slowed) && !detect_cgroups().usable())
    return std::string(limits ? "hosts: cpu/memory limits" : "faults: slow hosts") +
           " need cgroups: " + detect_cgroups().describe();
  return std::nullopt;
}

std::vector<std::string> notes(const Scenario& s, const UpResult& up) {
  std::vector<std::string> out;
  const PlanOptions& mode = up.plan_options;
  if (up.plan.shaped_ports == 0)
    out.push_back("links unshaped (veth speed); `fabemu link set` shapes one live");
  else if (mode.fq)
    out.push_back("link model on " + std::to_string(up.plan.shaped_ports) +
                  " ports: eBPF departure times released by fq (rate, delay, jitter, loss, "
                  "queue, ECN)");
  else if (mode.htb)
    out.push_back("link model on " + std::to_string(up.plan.shaped_ports) +
                  " ports: this kernel has no fq (" + mode.no_fq_reason +
                  "), so htb holds each link's rate in a real queue and eBPF adds loss, tail drop "
                  "and ECN, but no delay or jitter is added");
  else
    out.push_back("link model on " + std::to_string(up.plan.shaped_ports) +
                  " ports as a POLICER: this kernel has no fq (" + mode.no_fq_reason +
                  "), so rate, loss, queue and ECN hold but no delay or jitter is added; TCP "
                  "through a link policed below what the CPU carries gets far less than its "
                  "rate (nothing paces it)");
  if (up.plan.ovs_bridges) {
    const OvsChoice& ovs = mode.ovs;
    out.push_back("switches: " + std::to_string(up.plan.ovs_bridges) + " Open vSwitch bridges (" +
                  (ovs.kernel ? "kernel datapath"
                              : "userspace datapath, " + ovs.why_userspace +
                                    "; offloads off on every switch link") +
                  "); `fabemu exec LAB:SWITCH -- ovs-ofctl dump-flows SWITCH`");
  }
  if (up.plan.rxe_devices)
    out.push_back("rdma: rxe on " + std::to_string(up.plan.rxe_devices) +
                  " hosts (fabemu-LAB-HOST on each host's NIC, RoCEv2 GID index 1); `fabemu "
                  "perf` runs perftest between two");
  else if (s.rdma == RdmaMode::Auto)
    out.push_back("rdma: auto: off (" + mode.rdma.why_not + ")");
  return out;
}

struct Prepared {
  Scenario scenario;
  std::string text;
  LabPaths paths;
  LabModel model;  // with address pool 0: what --dry-run shows; `up` picks the free pool
  PlanOptions plan;
};

// rxe on the hosts or not, and why; the text of a refusal when the scenario says `on` and the
// kernel cannot. Probing needs root: without it (a dry run) `on` is planned as asked and
// `auto` follows an earlier verdict of this boot, if there is one.
std::optional<std::string> choose_rdma(const Scenario& s, const LabPaths& paths, RdmaChoice& out) {
  if (s.rdma == RdmaMode::Off) {
    out = {false, "rdma.enabled: off"};
    return std::nullopt;
  }
  const auto support = ::geteuid() == 0
                           ? std::optional(doctor::rxe_support(paths.rxe_probe_cache()))
                           : doctor::cached_rxe_support(paths.rxe_probe_cache());
  if (!support) {
    out = {s.rdma == RdmaMode::On, "not probed (needs root)"};
    return std::nullopt;
  }
  if (support->usable) {
    out = {true, ""};
    return std::nullopt;
  }
  if (s.rdma == RdmaMode::On)
    return "rdma.enabled: on, but soft-RoCE cannot work between this kernel's namespaces: " +
           support->reason +
           ". Use rdma: {enabled: auto} (or off), or a kernel >= 7.1 with rdma_rxe "
           "(./scripts/vm-run runs one)";
  out = {false, support->reason};
  return std::nullopt;
}

// The OVS datapath: the kernel's unless the scenario says userspace or the module is missing;
// the text of a refusal when the scenario says kernel and there is none.
std::optional<std::string> choose_ovs_datapath(const Scenario& s, OvsChoice& out) {
  if (s.fabric.switch_kind != SwitchKind::Ovs) return std::nullopt;
  if (s.fabric.ovs_datapath == OvsDatapath::Userspace) {
    out = {false, "fabric.ovs_datapath: userspace"};
    return std::nullopt;
  }
  auto kernel = probe_ovs_kernel_datapath();
  if (kernel) {
    out = {true, ""};
    return std::nullopt;
  }
  if (s.fabric.ovs_datapath == OvsDatapath::Kernel)
    return "fabric.ovs_datapath: kernel, but " + kernel.error().what() +
           ". Use ovs_datapath: auto (or userspace), or a kernel with the openvswitch module "
           "(./scripts/vm-run runs one)";
  out = {false, kernel.error().what()};
  return std::nullopt;
}

// fq, else htb + policer, else the policer alone. Probing needs root (a throwaway namespace);
// a dry run without root plans fq.
PlanOptions probe_shaping_mode() {
  PlanOptions o;
  o.rps_mask = cpu_mask(static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_CONF))));
  if (::geteuid() != 0) return o;
  if (auto r = probe_fq(); !r) {
    o.fq = false;
    o.no_fq_reason = "sch_fq: " + r.error().what();
    o.htb = static_cast<bool>(probe_htb());
  }
  return o;
}

// Loads and validates everything; returns an exit code on failure.
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
  if (auto why = unsupported(p.scenario, *model)) {
    print_error(p.scenario.file + ": " + *why);
    return kExitBadInput;
  }
  p.model = std::move(*model);
  if (const std::string& cc = p.scenario.hosts.tcp_congestion; !cc.empty()) {
    // Refused here rather than half-way through `up`: a namespace may only pick what the
    // machine's administrator allowed (net.ipv4.tcp_allowed_congestion_control).
    auto allowed = read_file("/proc/sys/net/ipv4/tcp_allowed_congestion_control");
    std::string list = allowed ? *allowed : "";
    while (!list.empty() && list.back() == '\n') list.pop_back();
    if (allowed && (" " + list + " ").find(" " + cc + " ") == std::string::npos) {
      print_error(p.scenario.file + ": hosts.tcp_congestion: '" + cc +
                  "' is not allowed in network namespaces on this machine (allowed: " + list +
                  "; the administrator adds one with sysctl "
                  "net.ipv4.tcp_allowed_congestion_control)");
      return kExitBadInput;
    }
  }
  p.plan = probe_shaping_mode();
  if (auto refusal = choose_rdma(p.scenario, p.paths, p.plan.rdma)) {
    print_error(p.scenario.file + ": " + *refusal);
    return kExitBadInput;
  }
  if (auto refusal = choose_ovs_datapath(p.scenario, p.plan.ovs)) {
    print_error(p.scenario.file + ": " + *refusal);
    return kExitBadInput;
  }
  if (auto need = needs_fq(p.model); !p.plan.fq && !need.empty() && !args.accept_degraded) {
    std::string msg = p.scenario.file + ": links: " + need.front();
    if (need.size() > 1) msg += " (and " + std::to_string(need.size() - 1) + " more directions)";
    msg += " needs the fq qdisc to add delay and jitter, and this kernel has none (" +
           p.plan.no_fq_reason +
           "). Use a kernel with sch_fq (./scripts/vm-run runs one), or pass --accept-degraded to "
           "build the lab with rate, loss, queue and ECN only";
    print_error(msg);
    return kExitBadInput;
  }
  return p;
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
  for (const auto& n : notes(p.scenario, *up)) std::printf("  note: %s\n", n.c_str());
  out = std::move(*up);
  return kExitOk;
}

int cmd_up(const UpArgs& args, const LabPaths& base) {
  std::optional<UpResult> up;
  LabPaths paths;
  int code = bring_up(args, base, up, paths);
  if (code != kExitOk || args.dry_run) return code;
  const auto hosts = up->model.topo.hosts();
  std::printf("  try: fabemu exec %s:%s -- ping -c3 %s\n", paths.lab.c_str(),
              up->model.topo.nodes[hosts.front()].name.c_str(),
              up->model.topo.nodes[hosts.back()].name.c_str());
  std::printf("       fabemu status %s; fabemu down %s\n", paths.lab.c_str(), paths.lab.c_str());
  return kExitOk;
}

int cmd_down(const std::vector<std::string>& labs_in, bool all, const LabPaths& base) {
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
  for (const auto& lab : labs) {
    LabPaths paths = base;
    paths.lab = lab;
    if (!all && !path_exists(paths.run_dir())) {
      print_error("down: no lab named '" + lab + "'");
      code = std::max(code, kExitNoLab);
      continue;
    }
    auto start = Clock::now();
    if (auto r = lab_down(paths, **backend); !r) {
      print_error(r.error().what());
      code = kExitFailed;
      continue;
    }
    std::printf("lab %s down in %.2f s\n", lab.c_str(), seconds_since(start));
  }
  return code == kExitNoLab && labs.size() > 1 ? kExitFailed : code;
}

}  // namespace fabemu::cli
