// What the running kernel can do for a lab, asked in one place by both `up` and `doctor`: fq and
// htb, the link model itself (loaded, verified and attached by tcx or clsact), OVS's kernel
// datapath, soft-RoCE between namespaces, the TCP congestion controls a namespace may pick.
// The probe behind it is an interface (the kernel's, or a fake in unit tests); what a lab then
// uses is decided from its answers by a pure function.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "doctor/probe.h"
#include "model/lab_model.h"
#include "model/time_scale.h"
#include "plan/plan.h"
#include "util/result.h"

namespace fabemu {

// One feature: whether the kernel has it and what the probe saw ("created qdisc fq as root of
// lo", "ENOENT creating qdisc fq (kernel: Specified qdisc kind is unknown)"). Unknown: the
// probe could not tell (not root, tools missing, too slow a machine).
struct Capability {
  ProbeStatus status = ProbeStatus::Unknown;
  std::string detail;
  bool yes() const { return status == ProbeStatus::Yes; }
  bool no() const { return status == ProbeStatus::No; }
  static Capability of(const Result<void>& r, const std::string& success);
};

// The link model as `up` loads it: the real program verified by this kernel, and each way of
// attaching it at a veth's egress.
struct LinkModelCapability {
  Capability load, tcx, clsact;
  bool usable() const { return load.yes() && (tcx.yes() || clsact.yes()); }
};

// One question per feature; the kernel's answers come from throwaway namespaces.
class KernelProbe {
 public:
  virtual ~KernelProbe() = default;
  virtual Capability fq() = 0;
  virtual Capability htb() = 0;
  virtual LinkModelCapability link_model() = 0;
  // PFC's queue mode: this kernel verifies fabemu's BPF qdisc (struct_ops Qdisc_ops).
  virtual Capability pfc_qdisc() = 0;
  virtual Capability ovs_kernel() = 0;
  virtual Capability ovs_userspace() = 0;  // the lab's own daemons: the OVS programs installed
  virtual Capability rxe() = 0;
  // A child cgroup with `controller` ("cpu", "memory") limits can be made: host limits, slow
  // hosts.
  virtual Capability cgroup(const std::string& controller) = 0;
  // Those `net.ipv4.tcp_allowed_congestion_control` lets a namespace pick; unset: unreadable.
  virtual std::optional<std::vector<std::string>> congestion_controls() = 0;
  // Each namespace seeds its own ECMP hash (`net.ipv4.fib_multipath_hash_seed`, kernel >= 6.11),
  // so that switches choose next hops apart without the link model re-hashing every frame.
  virtual Capability ecmp_seed() = 0;
  // How much emulated traffic this machine carries in real time (runtime/calibrate.h): kept
  // from earlier this boot, else measured now when `measure` (~30 s); unset with `why` when
  // neither.
  // `kind`: with or without GSO super-frames through the fabric (model/time_scale.h).
  virtual std::optional<Capacity> capacity(bool measure, std::string& why,
                                           CapacityKind kind = CapacityKind::Plain) = 0;
};

// Each answer asked of the probe once, when first needed: a scenario without OVS never probes
// the OVS datapath, one with rdma off never tries rxe.
class Capabilities {
 public:
  explicit Capabilities(KernelProbe& probe) : probe_(probe) {}
  const Capability& fq();
  const Capability& htb();
  const LinkModelCapability& link_model();
  const Capability& pfc_qdisc();
  const Capability& ovs_kernel();
  const Capability& ovs_userspace();
  const Capability& rxe();
  const Capability& cgroup(const std::string& controller);
  const std::optional<std::vector<std::string>>& congestion_controls();
  const Capability& ecmp_seed();
  // Measured when `measure` and nothing is kept; `why` says why there is none.
  std::optional<Capacity> capacity(bool measure, std::string& why,
                                   CapacityKind kind = CapacityKind::Plain);

 private:
  KernelProbe& probe_;
  std::optional<Capability> fq_, htb_, pfc_qdisc_, ovs_kernel_, ovs_userspace_, rxe_, ecmp_seed_;
  std::map<std::string, Capability> cgroups_;
  std::optional<LinkModelCapability> link_model_;
  std::optional<std::optional<std::vector<std::string>>> congestion_;
  std::optional<Capacity> capacity_[2];  // by CapacityKind
};

struct ChoiceOptions {
  // Build without fq although links ask for delay or jitter (they then get none).
  bool accept_degraded = false;
  // Every CPU as a hex cpumask, for the lab's receive steering (see PlanOptions::rps_mask).
  std::string rps_mask;
};

// What `up` builds a lab with on this kernel: the link model's mode (fq; else htb holding the
// rate with the program policing; else the policer alone), soft-RoCE or not, the OVS datapath.
// A scenario that asks for what this kernel cannot do (delay without fq, rdma: on without rxe,
// ovs_datapath: kernel without the module, OVS not installed, limits without cgroups, a
// congestion control namespaces may not pick, shaped links without a link model) is refused with
// EOPNOTSUPP and a message that names the field, what the probe saw and what to do; nothing has
// been touched then.
Result<PlanOptions> choose_plan_options(const LabModel& model, Capabilities& caps,
                                        const ChoiceOptions& options = {});

// The lab's time scale: `flag` (--time-scale: a number or "auto") over the scenario's. `auto`
// divides the lab's demand by this machine's capacity (calibrating it when this boot has not),
// and refuses a lab whose host links have no rate. An explicit factor too small for the
// machine's known capacity is kept, with a note saying what `auto` would pick.
struct TimeScaleChoice {
  TimeScale scale;
  std::string why;
  std::vector<std::string> notes;
};
// `rxe`: the hosts get soft-RoCE, whose frames are one skb each whatever fabric.gso says, so the
// plain capacity holds for them.
Result<TimeScaleChoice> choose_time_scale(const LabModel& model, const std::string& flag,
                                          Capabilities& caps, bool rxe = false);

// The doctor's rows for the features above ("bpf", "clsact", "tcx", "sch_fq", "sch_htb",
// "ovs_kernel", "ovs_userspace", "rxe", "cgroup_cpu", "cgroup_memory", "tcp_congestion",
// "ecmp_seed", "capacity"): id, status and detail (the catalog adds names and costs). The capacity
// is this boot's calibration, measured now only when `calibrate`.
std::vector<FeatureProbe> capability_rows(Capabilities& caps, bool calibrate = false);

}  // namespace fabemu
