// The feature catalog and the order of probing: which probe runs where, and under what deadline.
#include "doctor/probe.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <thread>

#include "doctor/capabilities.h"
#include "doctor/namespace_probes.h"
#include "doctor/system_probe.h"

namespace fabemu {

namespace {

struct Feature {
  const char* id;
  const char* name;
  const char* cost;  // what a user loses without it
  bool kernel;       // needs root to probe
};

// The order users read the table in: namespaces and links first, then the link model, then the
// optional backends.
constexpr Feature kFeatures[] = {
    {"netns", "network namespaces",
     "nothing can be emulated: every host and switch is a network namespace", true},
    {"uts_ns", "UTS namespaces (hostnames)",
     "hosts share the machine's hostname: Open MPI fails intermittently unless each host has its "
     "own TMPDIR",
     true},
    {"veth", "veth pairs", "no links: no fabric can be built", true},
    {"bridge", "Linux bridge", "fabric.switch: bridge is unavailable (router still works)", true},
    {"ecmp", "ECMP multipath routes",
     "router fabrics use one path per destination: no ECMP spreading", true},
    {"ecmp_seed", "an ECMP hash seed per namespace",
     "the link model gives every frame a new flow hash at each port so that switches choose "
     "apart, and each hop then steers the flow to another CPU (RPS): more wake-ups, ~0.1 ms more "
     "a collective step",
     false},
    {"bpf", "BPF sched_cls programs",
     "no link model: rate, delay, loss and ECN are not emulated; links run at veth speed", true},
    {"clsact", "BPF tc attach (clsact)",
     "the link model must attach through tcx; with neither there is no link model", true},
    {"tcx", "BPF tcx attach", "none: the link model attaches through clsact instead", true},
    {"sch_fq", "fq qdisc (EDT pacing)",
     "no EDT delay/jitter: the link model polices (rate, loss, queue, ECN; no added delay); "
     "`up` refuses delay/jitter unless --accept-degraded",
     true},
    {"sch_netem", "netem qdisc",
     "no netem for delay/jitter: only the BPF+fq link model can add delay", true},
    {"sch_htb", "htb qdisc",
     "no class-based shaping with htb: rates come only from the BPF link model", true},
    {"sch_tbf", "tbf qdisc",
     "no token-bucket shaping with tbf: rates come only from the BPF link model", true},
    {"bpf_qdisc", "BPF qdiscs (struct_ops Qdisc_ops)",
     "fabric.lossless.hold: queue is refused: PFC holds frames by departure times (fq), which "
     "cannot deadlock",
     true},
    {"ifb", "ifb devices",
     "no ingress shaping through ifb; the link model shapes at egress and does not need it", true},
    {"ovs_kernel", "Open vSwitch kernel datapath",
     "fabric.switch: ovs falls back to the userspace netdev datapath (offloads off; a "
     "fraction of the kernel's speed: ~0.2 Gbit/s of TCP across a k=4 fat-tree here, "
     "bench/ovs_fabric.py)",
     true},
    {"ovs_userspace", "Open vSwitch userspace",
     "fabric.switch: ovs is unavailable (apt install openvswitch-switch)", false},
    {"rxe", "soft-RoCE (rdma_rxe)",
     "no RDMA: `up` leaves rxe off (rdma: auto) and refuses rdma: on; collectives run over TCP",
     true},
    {"cgroup_cpu", "cgroup cpu limits", "hosts.cpu limits cannot be applied", true},
    {"cgroup_memory", "cgroup memory limits", "hosts.memory limits cannot be applied", true},
    {"tcp_congestion", "TCP congestion controls",
     "hosts.tcp_congestion is limited to what net.ipv4.tcp_allowed_congestion_control allows",
     false},
    {"capacity", "emulated traffic carried in real time",
     "time_scale: auto calibrates it first (~15 s, once per boot)", false},
    {"capacity_gso", "... with GSO super-frames (fabric.gso)",
     "time_scale: auto calibrates it first for a lab with fabric.gso (~20 s, once per boot)",
     false},
};

// A safety net, not the expected time (~0.1 s): every netlink reply already has a 250 ms
// timeout, but unshare() itself can wait on kernel locks held by a busy host.
constexpr std::chrono::seconds kNamespaceDeadline{3};

// Runs the namespace probes on their own thread. On a timeout the thread is detached and left
// to finish on its own: its results land in the shared state and are dropped, and its namespace
// dies with it, so nothing leaks into the host.
std::vector<FeatureProbe> namespace_probes_with_deadline(std::string& failure) {
  auto task = std::make_shared<std::packaged_task<std::vector<FeatureProbe>()>>(
      doctor::run_namespace_probes);
  std::future<std::vector<FeatureProbe>> result = task->get_future();
  try {
    std::thread worker([task] { (*task)(); });
    if (result.wait_for(kNamespaceDeadline) != std::future_status::ready) {
      worker.detach();
      failure = "timed out after 3 s in the namespace probes";
      return {};
    }
    worker.join();
    return result.get();
  } catch (const std::exception& e) {
    failure = std::string("namespace probe thread failed: ") + e.what();
    return {};
  }
}

}  // namespace

std::string_view to_string(ProbeStatus status) {
  switch (status) {
    case ProbeStatus::Yes:
      return "yes";
    case ProbeStatus::No:
      return "no";
    case ProbeStatus::Partial:
      return "partial";
    case ProbeStatus::Unknown:
      break;
  }
  return "unknown";
}

KernelInfo kernel_info() {
  KernelInfo k;
  utsname u{};
  if (::uname(&u) == 0) k.release = u.release;
  k.root = ::geteuid() == 0;
  return k;
}

std::vector<FeatureProbe> probe_features(const std::string& run_root, bool calibrate,
                                         std::function<void(const std::string&)> progress,
                                         Calibrator calibrator) {
  KernelInfo kernel = kernel_info();
  std::vector<FeatureProbe> seen;
  std::string failure;
  if (kernel.root) seen = namespace_probes_with_deadline(failure);
  // What `up` uses, asked exactly as `up` asks it, and probed afresh.
  SystemProbe probe(run_root, /*fresh=*/true);
  probe.progress = std::move(progress);
  probe.calibrator = std::move(calibrator);
  Capabilities caps(probe);
  for (FeatureProbe& p : capability_rows(caps, calibrate)) seen.push_back(std::move(p));

  // One entry per catalog feature, in catalog order, whatever the probes managed to report.
  std::vector<FeatureProbe> out;
  for (const Feature& f : kFeatures) {
    FeatureProbe p{f.id, f.name, ProbeStatus::Unknown, {}, f.cost};
    auto it =
        std::find_if(seen.begin(), seen.end(), [&](const FeatureProbe& s) { return s.id == f.id; });
    if (it != seen.end()) {
      p.status = it->status;
      p.detail = it->detail;
      if (!it->cost.empty()) p.cost = it->cost;
      p.figures = it->figures;
    } else if (!kernel.root && f.kernel) {
      p.detail = "needs root";
    } else {
      p.detail = failure.empty() ? "the probe did not report" : failure;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace fabemu
