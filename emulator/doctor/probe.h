// `fabemu doctor`: probes what the running kernel and machine can emulate, by trying each thing.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "model/time_scale.h"
#include "plan/plan.h"
#include "util/json.h"
#include "util/result.h"

namespace fabemu {

enum class ProbeStatus { Yes, No, Partial, Unknown };

// "yes", "no", "partial", "unknown".
std::string_view to_string(ProbeStatus status);

struct FeatureProbe {
  // Stable key, in this order: netns, uts_ns, veth, bridge, ecmp, ecmp_seed, bpf, clsact, tcx,
  // sch_fq, sch_netem, sch_htb, sch_tbf, bpf_qdisc, ifb, ovs_kernel, ovs_userspace, rxe,
  // cgroup_cpu, cgroup_memory, tcp_congestion.
  std::string id;
  std::string name;  // for people: "BPF tcx attach"
  ProbeStatus status = ProbeStatus::Unknown;
  std::string detail;  // what the probe saw: "ENOENT creating qdisc fq (kernel: ...)"
  std::string cost;    // what a user loses when the feature is missing (set for every feature)
  Json figures;        // what was measured, as numbers (the capacity's); null for the others
};

struct KernelInfo {
  std::string release;  // uname -r
  bool root = false;    // effective uid 0: most probes need it
};

KernelInfo kernel_info();

// What measures this machine's capacity (runtime/calibrate.h, handed in by the session:
// measuring runs a lab, a layer above the doctor): the link model's mode on this kernel and
// where each trial's line goes.
using Calibrator = std::function<Result<Capacity>(
    const PlanOptions& plan, const std::function<void(const std::string&)>& progress,
    CapacityKind kind)>;

// Runs every probe, in a fixed order, and returns one entry per feature id. Network probes run
// in a throwaway network namespace on a dedicated thread, so the host's interfaces are never
// touched and everything they create vanishes with the thread. Without root every kernel probe
// is Unknown with detail "needs root". Takes well under a second; never throws.
// What `up` uses (fq, htb, the link model, OVS, rxe, cgroups, congestion controls) is asked
// through the capability module, afresh, and the verdicts kept under `run_root` for `up`.
// `calibrate` measures this machine's capacity now (a lab for ~30 s) instead of showing what
// this boot kept, through `calibrator` (SystemProbe::calibrator); `progress` hears each trial.
std::vector<FeatureProbe> probe_features(const std::string& run_root = "/run/fabemu",
                                         bool calibrate = false,
                                         std::function<void(const std::string&)> progress = {},
                                         Calibrator calibrator = {});

// An aligned plain-text table for the terminal: feature, status (yes/no/partial/?), detail and,
// for features that are not fully there, what that costs.
std::string format_doctor_table(const KernelInfo& kernel, const std::vector<FeatureProbe>& probes);

// The same as one JSON object (`doctor --json`, docs/schema/doctor.schema.json).
Json doctor_json(const KernelInfo& kernel, const std::vector<FeatureProbe>& probes);

}  // namespace fabemu
