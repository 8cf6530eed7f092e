// Capabilities asked once each, and what a scenario may use of them: refusals with reasons.
#include "doctor/capabilities.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "plan/partition.h"
#include "util/host_clock.h"
#include "util/netlink.h"
#include "util/process.h"
#include "util/units.h"

namespace fabemu {

Capability Capability::of(const Result<void>& r, const std::string& success) {
  if (r) return {ProbeStatus::Yes, success};
  return {ProbeStatus::No, describe(r.error())};
}

const Capability& Capabilities::fq() {
  if (!fq_) fq_ = probe_.fq();
  return *fq_;
}

const Capability& Capabilities::htb() {
  if (!htb_) htb_ = probe_.htb();
  return *htb_;
}

const Capability& Capabilities::pfc_qdisc() {
  if (!pfc_qdisc_) pfc_qdisc_ = probe_.pfc_qdisc();
  return *pfc_qdisc_;
}

const LinkModelCapability& Capabilities::link_model() {
  if (!link_model_) link_model_ = probe_.link_model();
  return *link_model_;
}

const Capability& Capabilities::ovs_kernel() {
  if (!ovs_kernel_) ovs_kernel_ = probe_.ovs_kernel();
  return *ovs_kernel_;
}

const Capability& Capabilities::ovs_userspace() {
  if (!ovs_userspace_) ovs_userspace_ = probe_.ovs_userspace();
  return *ovs_userspace_;
}

const Capability& Capabilities::rxe() {
  if (!rxe_) rxe_ = probe_.rxe();
  return *rxe_;
}

const Capability& Capabilities::cgroup(const std::string& controller) {
  auto it = cgroups_.find(controller);
  if (it == cgroups_.end()) it = cgroups_.emplace(controller, probe_.cgroup(controller)).first;
  return it->second;
}

const std::optional<std::vector<std::string>>& Capabilities::congestion_controls() {
  if (!congestion_) congestion_ = probe_.congestion_controls();
  return *congestion_;
}

const Capability& Capabilities::ecmp_seed() {
  if (!ecmp_seed_) ecmp_seed_ = probe_.ecmp_seed();
  return *ecmp_seed_;
}

std::optional<Capacity> Capabilities::capacity(bool measure, std::string& why, CapacityKind kind) {
  std::optional<Capacity>& kept = capacity_[kind == CapacityKind::Gso];
  if (kept) return kept;
  auto c = probe_.capacity(measure, why, kind);
  if (c) kept = c;
  return c;
}

namespace {

Error refused(const std::string& what) {
  return make_error(what, EOPNOTSUPP);
}

constexpr const char* kFullKernel =
    "a kernel that has it (./scripts/vm-run runs Debian's >= 7.1 kernel, which has everything)";

// Host limits and slow-host faults need cgroups with the controllers they write.
Result<void> check_cgroups(const LabModel& m, Capabilities& caps) {
  bool cpu = false, memory = false;
  for (const Node& n : m.topo.nodes) {
    cpu |= n.limits.cpu.has_value();
    memory |= n.limits.memory_bytes.has_value();
  }
  bool slowed = false;
  for (const FaultEvent& f : m.scenario.faults) slowed |= f.slow_cpu.has_value();
  for (auto [needed, controller, what] : {std::tuple{cpu, "cpu", "hosts: cpu limits"},
                                          {memory, "memory", "hosts: memory limits"},
                                          {slowed, "cpu", "faults: slow hosts"}}) {
    if (!needed) continue;
    const Capability& c = caps.cgroup(controller);
    if (c.no())
      return refused(std::string(what) + " need cgroups with the " + controller +
                     " controller: " + c.detail);
  }
  return ok();
}

Result<void> check_congestion(const Scenario& s, Capabilities& caps) {
  const std::string& cc = s.hosts.tcp_congestion;
  if (cc.empty()) return ok();
  const auto& allowed = caps.congestion_controls();
  if (!allowed || std::find(allowed->begin(), allowed->end(), cc) != allowed->end()) return ok();
  std::string list;
  for (const auto& a : *allowed) list += (list.empty() ? "" : " ") + a;
  // A namespace may only pick what the machine's administrator allowed.
  return refused("hosts.tcp_congestion: '" + cc +
                 "' is not allowed in network namespaces on this machine (allowed: " + list +
                 "; the administrator adds one with sysctl "
                 "net.ipv4.tcp_allowed_congestion_control)");
}

// hosts.clock: fabric needs libfaketime and fabemu's clockwait library on this machine.
Result<void> check_clock(const Scenario& s) {
  if (s.hosts.clock != HostClock::Fabric) return ok();
  auto libs = find_clock_libraries(self_exe());
  if (!libs) return refused(libs.error().message);
  return ok();
}

// fq, else htb holding the rate under the policer, else the policer alone; delay and jitter
// need fq unless the user accepts going without.
Result<void> choose_shaping(const LabModel& m, Capabilities& caps, const ChoiceOptions& options,
                            PlanOptions& out) {
  const Capability& fq = caps.fq();
  // Unknown (no root: a dry run) plans fq, the mode of a full kernel.
  out.fq = !fq.no();
  if (!out.fq) {
    out.no_fq_reason = "sch_fq: " + fq.detail;
    out.htb = caps.htb().yes();
  }
  auto need = needs_fq(m);
  if (!out.fq && !need.empty() && !options.accept_degraded) {
    std::string msg = "links: " + need.front();
    if (need.size() > 1) msg += " (and " + std::to_string(need.size() - 1) + " more directions)";
    return refused(msg +
                   " needs the fq qdisc (to add delay and jitter, and for PFC to hold the "
                   "lossless class back), and this kernel has none (" +
                   out.no_fq_reason +
                   "). Use a kernel with sch_fq (./scripts/vm-run runs one), or pass "
                   "--accept-degraded to build the lab with rate, loss, queue and ECN only");
  }
  if (const auto& l = m.scenario.fabric.lossless; l && l->hold_queue) {
    if (!out.fq)
      return refused("fabric.lossless.hold: queue needs departure times to honour (fq), and " +
                     out.no_fq_reason + ". ./scripts/vm-run runs a kernel with both");
    const Capability& q = caps.pfc_qdisc();
    if (q.no())
      return refused(
          "fabric.lossless.hold: queue needs fabemu's BPF qdisc, and this kernel "
          "cannot load it: " +
          q.detail + ". Use hold: departure, or ./scripts/vm-run (its kernel has BPF qdiscs)");
  }
  if (m.part) {
    // The pause state lives in one kernel's maps: both ends of a PFC link on one machine.
    const auto& on = m.part->placement.machine_of;
    for (const Link& l : m.topo.links)
      for (const LinkShape* s : {&l.a_to_b, &l.b_to_a})
        if (s->pfc && s->pfc->xoff_bytes && on[l.a.node] != on[l.b.node])
          return refused("links: " + link_name(m.topo, l) +
                         " has pfc but is cut between machines; PFC across machines is not "
                         "supported yet (place both ends on one machine with placement:)");
  }
  bool shaped = false;
  for (const Link& l : m.topo.links) shaped |= !l.a_to_b.empty() || !l.b_to_a.empty();
  if (shaped) {
    const LinkModelCapability& lm = caps.link_model();
    if (lm.load.no())
      return refused("links: the link model cannot be loaded on this kernel: " + lm.load.detail);
    if (lm.load.yes() && lm.tcx.no() && lm.clsact.no())
      return refused("links: the link model cannot be attached to a port (tcx: " + lm.tcx.detail +
                     "; clsact: " + lm.clsact.detail + ")");
  }
  return ok();
}

// rxe on the hosts or not, and why; `on` without rxe is refused.
Result<void> choose_rdma(const Scenario& s, Capabilities& caps, RdmaChoice& out) {
  if (s.rdma == RdmaMode::Off) {
    out = {false, "rdma.enabled: off"};
    return ok();
  }
  const Capability& rxe = caps.rxe();
  if (rxe.yes()) {
    out = {true, ""};
    return ok();
  }
  if (rxe.status == ProbeStatus::Unknown) {  // not probed (a dry run without root)
    out = {s.rdma == RdmaMode::On || s.rdma_cc.cc == RoceCc::Dcqcn, rxe.detail};
    return ok();
  }
  if (s.rdma == RdmaMode::On)
    return refused(
        "rdma.enabled: on, but soft-RoCE cannot work between this kernel's namespaces: " +
        rxe.detail +
        ". Use rdma: {enabled: auto} (or off), or a kernel >= 7.1 with rdma_rxe "
        "(./scripts/vm-run runs one)");
  out = {false, rxe.detail};
  return ok();
}

// rdma.cc: dcqcn: rxe on the hosts, fq to pace QPs by departure time, and a line rate on every
// host's own port, above the minimum rate.
Result<void> check_dcqcn(const LabModel& m, const PlanOptions& o) {
  const Scenario& s = m.scenario;
  if (s.rdma_cc.cc != RoceCc::Dcqcn) return ok();
  const std::string at = s.rdma_cc.loc.str() + ": rdma.cc: dcqcn";
  if (!o.rdma.rxe)
    return refused(at + " runs over soft-RoCE, which this lab has none of: " + o.rdma.why_not +
                   ". Use a kernel >= 7.1 with rdma_rxe (./scripts/vm-run runs one)");
  if (!o.fq)
    return refused(at + " paces each QP by departure time, which needs the fq qdisc: " +
                   o.no_fq_reason + ". Use a kernel with sch_fq (./scripts/vm-run runs one)");
  const Topology& t = m.topo;
  for (const Link& l : t.links)
    for (bool back : {false, true}) {
      const int from = back ? l.b.node : l.a.node;
      if (t.nodes[from].role != Role::Host) continue;
      const LinkShape& shape = back ? l.b_to_a : l.a_to_b;
      const uint64_t rate = shape.rate_bps.value_or(0);
      const std::string name = t.nodes[from].name;
      if (!rate)
        return refused(at + " needs a rate on every host's link (its NIC's line rate); " + name +
                       "'s has none");
      if (s.rdma_cc.dcqcn.min_rate_bps >= rate)
        return refused(at + ": dcqcn.min_rate (" + format_rate(s.rdma_cc.dcqcn.min_rate_bps) +
                       ") must be below the line rate of " + name + " (" + format_rate(rate) + ")");
    }
  return ok();
}

// The OVS datapath: the kernel's unless the scenario says userspace or the module is missing.
Result<void> choose_ovs(const Scenario& s, Capabilities& caps, OvsChoice& out) {
  if (s.fabric.switch_kind != SwitchKind::Ovs) return ok();
  if (const Capability& tools = caps.ovs_userspace(); tools.no())
    return refused("fabric.switch: ovs: " + tools.detail);
  if (s.fabric.ovs_datapath == OvsDatapath::Userspace) {
    out = {false, "fabric.ovs_datapath: userspace"};
    return ok();
  }
  const Capability& kernel = caps.ovs_kernel();
  if (kernel.yes()) {
    out = {true, ""};
    return ok();
  }
  if (s.fabric.ovs_datapath == OvsDatapath::Kernel)
    return refused("fabric.ovs_datapath: kernel, but " + kernel.detail +
                   ". Use ovs_datapath: auto (or userspace), or a kernel with the openvswitch "
                   "module (./scripts/vm-run runs one)");
  out = {false, kernel.detail};
  return ok();
}

}  // namespace

Result<PlanOptions> choose_plan_options(const LabModel& m, Capabilities& caps,
                                        const ChoiceOptions& options) {
  const Scenario& s = m.scenario;
  if (s.fabric.switch_kind == SwitchKind::Bridge)
    return refused(
        "fabric.switch: 'bridge' is not implemented in this version; valid: router, ovs");
  PlanOptions out;
  out.rps_mask = options.rps_mask;
  out.ecmp_seeds = caps.ecmp_seed().yes();
  FABEMU_TRY(choose_ovs(s, caps, out.ovs));
  FABEMU_TRY(check_cgroups(m, caps));
  FABEMU_TRY(check_congestion(s, caps));
  FABEMU_TRY(check_clock(s));
  FABEMU_TRY(choose_shaping(m, caps, options, out));
  FABEMU_TRY(choose_rdma(s, caps, out.rdma));
  FABEMU_TRY(check_dcqcn(m, out));
  return out;
}

Result<TimeScaleChoice> choose_time_scale(const LabModel& m, const std::string& flag,
                                          Capabilities& caps, bool rxe) {
  TimeScaleChoice out;
  const TimeScaleSpec& spec = m.scenario.time_scale;
  bool automatic = spec.automatic;
  double factor = spec.factor;
  std::string source = "time_scale in the scenario";
  if (!flag.empty()) {
    source = "--time-scale " + flag;
    automatic = flag == "auto";
    if (!automatic) {
      char* end = nullptr;
      factor = std::strtod(flag.c_str(), &end);
      if (*end != '\0' || !(factor >= 1 && factor <= kMaxTimeScale))
        return make_error(
            "--time-scale: '" + flag + "' is not auto or a number from 1 (real time) to 1000000",
            EINVAL);
    }
  }
  // A machine of a lab across machines carries its own ports' share; the launcher takes the
  // largest factor any machine needs.
  auto demand = lab_demand(m);
  // A lab with GSO super-frames through its fabric divides by what the machine carries so,
  // unless its collectives run over soft-RoCE (a frame an skb).
  const CapacityKind kind = rxe ? CapacityKind::Plain : capacity_kind(m.scenario.fabric);
  if (demand && m.part) demand = machine_loads(m, m.part->placement).at(m.part->index).demand;
  if (automatic) {
    if (!demand)
      return make_error(source +
                            ": auto needs a rate on every host's link (the demand it divides by "
                            "this machine's capacity); give links a rate or time_scale a number",
                        EINVAL);
    std::string why;
    auto cap = caps.capacity(/*measure=*/true, why, kind);
    if (!cap) return refused(source + ": auto needs this machine's capacity: " + why);
    // Bandwidth: the lab's frames over what the machine forwards. Latency: the machine's
    // per-step overhead a small part of the shortest collective step.
    const double bandwidth = *demand / cap->frame_hops_per_s;
    const double latency = latency_time_scale(m, *cap);
    out.scale.factor = readable_factor(std::max(bandwidth, latency));
    out.why = printf_string(
        "auto: %.3g frame-hops/s over this machine's %.3g%s is x%.0f; its %.2g ms a collective "
        "step under 5%% of the smallest step needs x%.0f",
        *demand, cap->frame_hops_per_s, kind == CapacityKind::Gso ? " (with GSO super-frames)" : "",
        bandwidth, cap->step_overhead_s * 1e3, latency);
    return out;
  }
  out.scale.factor = factor;
  if (factor != 1 || !flag.empty()) out.why = source;
  std::string why;
  if (auto cap = caps.capacity(/*measure=*/false, why, kind); cap && demand) {
    // Either limit may be the one the factor misses: say which (the frames fit and the steps'
    // overhead does not is common for a small lab in real time).
    const double bandwidth = *demand / cap->frame_hops_per_s;
    const double latency = latency_time_scale(m, *cap);
    const double need = readable_factor(std::max(bandwidth, latency));
    if (need > factor) {
      std::vector<std::string> short_of;
      if (bandwidth > factor)
        short_of.push_back(printf_string(
            "the lab needs %.3g frame-hops/s of wall clock and this machine carries %.3g",
            *demand / factor, cap->frame_hops_per_s));
      if (latency > factor)
        short_of.push_back(printf_string(
            "this machine adds %.2g ms of wall clock to each collective step, more than 5%% of "
            "the lab's smallest step below x%.0f",
            cap->step_overhead_s * 1e3, latency));
      std::string text =
          "time scale x" + format_factor(factor) + " is too small for this machine: ";
      for (size_t i = 0; i < short_of.size(); ++i) text += (i ? "; and " : "") + short_of[i];
      out.notes.push_back(text +
                          "; expect the CPU, not the links, to set busbw (auto would pick x" +
                          format_factor(need) + ")");
    }
  }
  return out;
}

std::vector<FeatureProbe> capability_rows(Capabilities& caps, bool calibrate) {
  auto row = [](const char* id, const Capability& c) {
    return FeatureProbe{id, {}, c.status, c.detail, {}};
  };
  const LinkModelCapability& lm = caps.link_model();
  std::vector<FeatureProbe> rows = {row("bpf", lm.load),
                                    row("clsact", lm.clsact),
                                    row("tcx", lm.tcx),
                                    row("sch_fq", caps.fq()),
                                    row("sch_htb", caps.htb()),
                                    row("bpf_qdisc", caps.pfc_qdisc()),
                                    row("ovs_kernel", caps.ovs_kernel()),
                                    row("ovs_userspace", caps.ovs_userspace()),
                                    row("rxe", caps.rxe()),
                                    row("cgroup_cpu", caps.cgroup("cpu")),
                                    row("cgroup_memory", caps.cgroup("memory"))};
  const auto& cc = caps.congestion_controls();
  std::string list;
  if (cc)
    for (const auto& a : *cc) list += (list.empty() ? "" : " ") + a;
  rows.push_back({"tcp_congestion",
                  {},
                  cc ? ProbeStatus::Yes : ProbeStatus::Unknown,
                  cc ? "hosts.tcp_congestion may be one of: " + list
                     : "net.ipv4.tcp_allowed_congestion_control is unreadable",
                  {}});
  rows.push_back(row("ecmp_seed", caps.ecmp_seed()));
  // The capacity one frame per skb, and with GSO super-frames through the fabric (fabric.gso).
  for (CapacityKind kind : {CapacityKind::Plain, CapacityKind::Gso}) {
    std::string why;
    const auto cap = caps.capacity(calibrate, why, kind);
    rows.push_back({kind == CapacityKind::Gso ? "capacity_gso" : "capacity",
                    {},
                    cap ? ProbeStatus::Yes : ProbeStatus::Unknown,
                    cap ? cap->detail : why,
                    {}});
    if (cap)
      rows.back().figures = {{"frame_hops_per_s", cap->frame_hops_per_s},
                             {"link_bps", cap->link_bps},
                             {"busbw_ratio", cap->ratio},
                             {"hosts", cap->hosts},
                             {"step_overhead_s", cap->step_overhead_s}};
  }
  return rows;
}

}  // namespace fabemu
