// `up`: the scenario checked and the machine asked before anything is touched, then the lab.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "apply/kernel_backend.h"
#include "doctor/capabilities.h"
#include "doctor/system_probe.h"
#include "plan/partition.h"
#include "runtime/cluster.h"
#include "scenario/loader.h"
#include "session/across.h"
#include "session/session.h"
#include "util/files.h"
#include "util/units.h"

namespace fabemu::session {
namespace {

using Clock = std::chrono::steady_clock;

// This machine's part of a lab across machines: the same placement on every machine, its own
// nodes built here; a cut link's frames in VXLAN must fit the underlay.
Result<void> add_machine_part(const UpRequest& req, Prepared& p) {
  auto placement = partition(p.model, static_cast<int>(req.cluster.size()));
  if (!placement)
    return with_failure(placement.error().context(p.scenario.file), Failure::BadInput);
  auto part = this_machine_part(req.cluster, req.shared_dir);
  if (!part) return part.error();
  part->placement = std::move(*placement);
  auto mtu = underlay_mtu(*part);
  if (!mtu) return mtu.error();
  if (p.scenario.fabric.mtu + kVxlanOverhead > *mtu)
    return with_failure(
        make_error(printf_string(
            "%s: fabric mtu %u + %u bytes of VXLAN headers does not fit the underlay's MTU %u "
            "(%s on %s): raise the underlay's MTU (jumbo frames) or lower fabric.mtu to %u",
            p.scenario.file.c_str(), p.scenario.fabric.mtu, kVxlanOverhead, *mtu,
            part->underlay_dev.c_str(), part->machines[part->index].c_str(),
            *mtu - kVxlanOverhead)),
        Failure::BadInput);
  p.model.part = std::move(*part);
  return {};
}

// What this kernel lets the lab do, asked as the doctor asks it (verdicts kept for the boot),
// and the time scale.
Result<void> ask_machine(const UpRequest& req, const LabPaths& base, Observer& observer,
                         Prepared& p) {
  SystemProbe probe(base.run_root, /*fresh=*/false);
  Capabilities caps(probe);
  ChoiceOptions choice;
  choice.accept_degraded = req.accept_degraded;
  choice.rps_mask = cpu_mask(static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_CONF))));
  // The refusals' own words, their errno as the kind (EOPNOTSUPP: not on this machine).
  auto refused = [&](const Error& e) {
    const int err = errno_of(e);
    return with_failure(make_error(p.scenario.file + ": " + e.message),
                        err == EOPNOTSUPP ? Failure::Unsupported
                        : err == EINVAL   ? Failure::BadInput
                                          : Failure::Failed);
  };
  auto options = choose_plan_options(p.model, caps, choice);
  if (!options) return refused(options.error());
  p.plan = std::move(*options);
  p.plan.netns_names =
      req.netns_names || p.model.topo.nodes.size() <= static_cast<size_t>(kNetnsNamesUpTo);
  // The kernel's one ARP table's limit (init_net's is the table's).
  if (auto text = read_file("/proc/sys/net/ipv4/neigh/default/gc_thresh3"))
    p.plan.neighbour_limit = std::atoi(text->c_str());
  probe.progress = [&observer](const std::string& line) { observer.remark(line); };
  probe.calibrator = calibrator(base.run_root);
  auto scale = choose_time_scale(p.model, req.time_scale, caps, p.plan.rdma.rxe);
  if (!scale) return refused(scale.error());
  p.model.time_scale = scale->scale;
  p.model.time_scale_why = scale->why;
  p.notes = std::move(scale->notes);
  return {};
}

// The routes a BGP lab's routers converge to (up waits for them): their planned FIBs' sizes.
size_t planned_bgp_routes(const LabModel& m) {
  size_t routes = 0;
  for (const BgpRouter& r : m.bgp) routes += r.fib.size();
  return routes;
}

}  // namespace

Result<Prepared> prepare(const UpRequest& req, const LabPaths& base, Observer& observer,
                         bool model_only) {
  // Read once: the lab's copy of the scenario is the text that was checked.
  auto text = read_file(req.scenario);
  if (!text)
    return with_failure(
        make_error("cannot read scenario file '" + req.scenario + "'", errno_of(text.error())),
        Failure::BadInput);
  auto sc = load_scenario_string(*text, req.scenario);
  if (!sc) return with_failure(sc.error(), Failure::BadInput);
  if (!req.replay.empty()) {
    auto step = load_replay_step(req.replay, req.replay_format, req.replay_groups);
    if (!step) return with_failure(step.error().context("--replay"), Failure::BadInput);
    sc->workload = {WorkloadStep{std::move(*step), std::nullopt, {req.replay, 0, 0}}};
  }
  Prepared p{std::move(*sc), std::move(*text), base};
  p.paths.lab = req.lab.empty() ? p.scenario.name : req.lab;
  if (!is_valid_lab_name(p.paths.lab))
    return with_failure(
        make_error("--lab: '" + p.paths.lab + "' is not a lab name: 1-12 of a-z, 0-9 and '-'"),
        Failure::BadInput);
  auto model = build_model(p.scenario, 0);
  if (!model) return with_failure(model.error(), Failure::BadInput);
  p.model = std::move(*model);
  if (model_only) return p;
  if (!req.cluster.empty()) FABEMU_TRY(add_machine_part(req, p));
  FABEMU_TRY(ask_machine(req, base, observer, p));
  return p;
}

Result<UpOutcome> up(Prepared p, const std::string& scenario_file, Observer& observer,
                     const std::atomic<int>* interrupt) {
  FABEMU_TRY(need_root("up"));
  auto backend = KernelBackend::create(p.paths.netns_dir);
  if (!backend) return backend.error();
  const auto start = Clock::now();
  UpOptions opts{p.text, scenario_file,
                 [&observer](std::string_view phase, size_t done, size_t total) {
                   observer.progress(phase, done, total);
                 },
                 p.plan};
  opts.time_scale = p.model.time_scale;
  opts.time_scale_why = p.model.time_scale_why;
  opts.interrupt = interrupt;
  auto built = lab_up(p.scenario, p.paths, **backend, opts);
  if (!built && errno_of(built.error()) == EINTR) {
    Error e = built.error();
    e.code = {};
    e.message += "; what it had made is gone again";
    return with_failure(e, Failure::Interrupted);
  }
  if (!built) return built.error();
  UpOutcome out;
  out.lab = p.paths.lab;
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  out.notes = up_notes(p.scenario, *built);
  out.notes.insert(out.notes.end(), p.notes.begin(), p.notes.end());
  out.up = std::move(*built);
  return out;
}

Result<UpOutcome> up_lab(const UpRequest& req, const LabPaths& base, Observer& observer,
                         const std::atomic<int>* interrupt) {
  if (!req.on.empty()) {
    AcrossLab across;
    return up_across(req, base, observer, across);
  }
  auto prepared = prepare(req, base, observer);
  if (!prepared) return prepared.error();
  return up(std::move(*prepared), req.scenario, observer, interrupt);
}

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
    const size_t routes = planned_bgp_routes(up.model);
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

Json UpOutcome::to_json() const {
  const LabModel& m = up.model;
  Json phases = Json::array();
  for (const auto& [phase, secs] : up.phase_seconds)
    phases.push_back({{"phase", phase}, {"seconds", secs}});
  // BGP: the BFD its sessions run.
  const auto& bfd = m.scenario.fabric.bfd;
  const Json bfd_json = up.plan.bgp_routers && bfd ? Json{{"interval_ns", bfd->interval_ns},
                                                          {"multiplier", bfd->multiplier}}
                                                   : Json(nullptr);
  Json j = {{"schema", kSchemaVersion},
            {"command", "up"},
            {"lab", lab},
            {"seconds", seconds},
            {"hosts", m.topo.host_count()},
            {"switches", m.topo.switches().size()},
            {"links", m.topo.links.size()},
            {"routes", up.plan.routes},
            {"addresses", m.addresses.pool.str()},
            {"time_scale", m.time_scale.factor},
            {"link_model", up.plan.shaped_ports ? std::string(shaping_mode_name(up.plan_options))
                                                : std::string("none")},
            {"shaped_ports", up.plan.shaped_ports},
            {"ovs_bridges", up.plan.ovs_bridges},
            {"bgp_routers", up.plan.bgp_routers},
            {"bgp_routes", planned_bgp_routes(m)},
            {"bfd", bfd_json},
            {"rxe_devices", up.plan.rxe_devices},
            {"phases", phases},
            {"notes", notes}};
  if (!machines.empty()) {
    Json parts = Json::array();
    for (const Machine& p : machines)
      parts.push_back({{"machine", p.name},
                       {"hosts", p.hosts},
                       {"switches", p.switches},
                       {"tunnels", p.tunnels},
                       {"seconds", p.seconds},
                       {"nodes", p.nodes}});
    j["launcher"] = launcher;
    j["machines"] = parts;
    j["cut_links"] = cut_links;
  }
  return j;
}

}  // namespace fabemu::session
