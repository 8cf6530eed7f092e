// The kernel's capabilities, each tried the way `up` uses it: the qdiscs with up's options, the
// link model's own program attached by tcx and clsact, the OVS tools and genetlink family, rxe
// traffic between two namespaces, a cgroup with a limit, the allowed congestion controls.
#include "doctor/system_probe.h"

#include <linux/netlink.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "apply/cgroup.h"
#include "apply/ovs.h"
#include "doctor/rxe_support.h"
#include "shaping/link_shaper.h"
#include "shaping/port_setup.h"
#include "util/files.h"
#include "util/netlink.h"

namespace fabemu {
namespace {

constexpr const char* kNeedsRoot = "not probed: needs root";

// What a kept verdict holds for: this boot, these modules loaded, this link-model program.
std::string verdict_key() {
  std::string key = boot_id();
  for (const char* module : {"sch_fq", "sch_htb", "cls_bpf", "sch_ingress"})
    if (path_exists(std::string("/sys/module/") + module)) key += std::string(" ") + module;
  char digest[32];
  std::snprintf(digest, sizeof digest, " prog %016llx",
                static_cast<unsigned long long>(LinkShaper::program_digest()));
  return key + digest;
}

// The capacity is the boot's and these CPUs'.
std::string capacity_key() {
  return boot_id() + " cpus " + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN));
}

// The kept capacities: {"key": ..., "plain": {...}, "gso": {...}}, each kind once measured;
// an object for another boot or CPU count is no one's.
nlohmann::json kept_capacities(const std::string& run_root) {
  auto text = read_file(run_root + "/capacity");
  if (!text) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("key", "") != capacity_key()) return nlohmann::json::object();
  return j;
}

// The capacity of `kind` measured earlier this boot, if any (no root needed).
std::optional<Capacity> kept_capacity(const std::string& run_root, CapacityKind kind) {
  const nlohmann::json all = kept_capacities(run_root);
  if (!all.contains(to_string(kind)) || !all[to_string(kind)].is_object()) return std::nullopt;
  const nlohmann::json& j = all[to_string(kind)];
  Capacity c;
  c.frame_hops_per_s = j.value("frame_hops_per_s", 0.0);
  c.step_overhead_s = j.value("step_overhead_s", 0.0);
  c.link_bps = j.value("link_bps", uint64_t{0});
  c.ratio = j.value("ratio", 0.0);
  c.hosts = j.value("hosts", 0);
  c.detail = j.value("detail", "");
  if (c.frame_hops_per_s <= 0) return std::nullopt;
  return c;
}

// Keeps `c` as this boot's capacity of `kind` beside the other kind's (best effort).
void keep_capacity(const std::string& run_root, CapacityKind kind, const Capacity& c) {
  nlohmann::json j = kept_capacities(run_root);
  j["key"] = capacity_key();
  j[to_string(kind)] = {{"frame_hops_per_s", c.frame_hops_per_s},
                        {"step_overhead_s", c.step_overhead_s},
                        {"link_bps", c.link_bps},
                        {"ratio", c.ratio},
                        {"hosts", c.hosts},
                        {"detail", c.detail}};
  // Written aside and renamed: a reader never sees half of it.
  const std::string path = run_root + "/capacity", tmp = path + "." + std::to_string(::getpid());
  if (make_dirs(run_root) && write_file(tmp, j.dump() + "\n") &&
      std::rename(tmp.c_str(), path.c_str()) != 0)
    ::unlink(tmp.c_str());
}

nlohmann::json to_json(const Capability& c) {
  return {{"status", std::string(to_string(c.status))}, {"detail", c.detail}};
}

std::optional<Capability> capability_from(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("status") || !j.contains("detail")) return std::nullopt;
  const std::string status = j["status"].get<std::string>();
  if (status != "yes" && status != "no") return std::nullopt;
  return Capability{status == "yes" ? ProbeStatus::Yes : ProbeStatus::No,
                    j["detail"].get<std::string>()};
}

// Runs on a thread of its own that moves into a new network namespace (gone with the thread).
void try_in_throwaway_namespace(Capability& fq, Capability& htb, LinkModelCapability& lm) {
  if (::unshare(CLONE_NEWNET) != 0) {
    const std::string why = describe(errno_error("making a throwaway network namespace"));
    fq = htb = lm.load = lm.tcx = lm.clsact = {ProbeStatus::Unknown, "not tried: " + why};
    return;
  }
  auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, std::chrono::seconds(5));
  if (rtnl) {
    // Loopback (ifindex 1) is every new namespace's one device.
    fq = Capability::of(try_root_fq(*rtnl, 1), "fq as root qdisc (EDT pacing) with up's limits");
    htb = Capability::of(try_root_htb(*rtnl, 1), "htb as root qdisc with one rate class");
  } else {
    fq = htb = {ProbeStatus::Unknown, "not tried: " + describe(rtnl.error())};
  }
  auto shaper = LinkShaper::load();
  if (!shaper) {
    lm.load = {ProbeStatus::No, describe(shaper.error())};
    lm.tcx = lm.clsact = {ProbeStatus::Unknown, "not tried: the link model did not load"};
    return;
  }
  lm.load = {ProbeStatus::Yes, "the link model's program loaded and verified"};
  for (auto [method, out, name] : {std::tuple{AttachMethod::Tcx, &lm.tcx, "tcx"},
                                   {AttachMethod::Clsact, &lm.clsact, "clsact"}}) {
    auto a = shaper->attach_here("lo", "a throwaway namespace", method);
    if (!a) {
      *out = {ProbeStatus::No, describe(a.error())};
      continue;
    }
    *out = {ProbeStatus::Yes, std::string("the link model attached at egress by ") + name};
    if (auto d = a->detach(); !d) out->detail += " (detaching: " + describe(d.error()) + ")";
  }
}

}  // namespace

SystemProbe::SystemProbe(std::string run_root, bool fresh)
    : run_root_(std::move(run_root)), fresh_(fresh), root_(::geteuid() == 0) {}

const SystemProbe::NamespaceVerdicts& SystemProbe::namespace_verdicts() {
  if (ns_) return *ns_;
  const std::string cache = run_root_ + "/kernel-probe";
  const std::string key = verdict_key();
  if (!fresh_) {
    if (auto text = read_file(cache)) {
      auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.value("key", "") == key) {
        auto fq = capability_from(j["fq"]), htb = capability_from(j["htb"]);
        auto load = capability_from(j["bpf"]), tcx = capability_from(j["tcx"]);
        auto clsact = capability_from(j["clsact"]);
        if (fq && htb && load && tcx && clsact)
          return *(ns_ = NamespaceVerdicts{*fq, *htb, {*load, *tcx, *clsact}});
      }
    }
  }
  NamespaceVerdicts v;
  if (!root_) {
    v.fq = v.htb = v.link_model.load = v.link_model.tcx =
        v.link_model.clsact = {ProbeStatus::Unknown, kNeedsRoot};
    return *(ns_ = v);
  }
  std::thread([&] { try_in_throwaway_namespace(v.fq, v.htb, v.link_model); }).join();
  const Capability* all[] = {&v.fq, &v.htb, &v.link_model.load, &v.link_model.tcx,
                             &v.link_model.clsact};
  const bool decided = std::all_of(std::begin(all), std::end(all),
                                   [](const Capability* c) { return c->yes() || c->no(); });
  if (decided) {
    // Written aside and renamed: a reader never sees half a verdict. Best effort.
    nlohmann::json j = {{"key", key},
                        {"fq", to_json(v.fq)},
                        {"htb", to_json(v.htb)},
                        {"bpf", to_json(v.link_model.load)},
                        {"tcx", to_json(v.link_model.tcx)},
                        {"clsact", to_json(v.link_model.clsact)}};
    const std::string tmp = cache + "." + std::to_string(::getpid());
    if (make_dirs(run_root_) && write_file(tmp, j.dump() + "\n") &&
        std::rename(tmp.c_str(), cache.c_str()) != 0)
      ::unlink(tmp.c_str());
  }
  return *(ns_ = v);
}

Capability SystemProbe::fq() {
  return namespace_verdicts().fq;
}

Capability SystemProbe::htb() {
  return namespace_verdicts().htb;
}

LinkModelCapability SystemProbe::link_model() {
  return namespace_verdicts().link_model;
}

Capability SystemProbe::pfc_qdisc() {
  if (!root_) return {ProbeStatus::Unknown, kNeedsRoot};
  return Capability::of(LinkShaper::probe_pfc_qdisc(),
                        "fabemu's BPF qdisc loaded and verified (PFC's queue mode)");
}

Capability SystemProbe::ovs_kernel() {
  auto id = probe_ovs_kernel_datapath();
  if (id)
    return {ProbeStatus::Yes,
            "genetlink family ovs_datapath registered (id " + std::to_string(*id) + ")"};
  return {errno_of(id.error()) == ENOENT ? ProbeStatus::No : ProbeStatus::Unknown,
          describe(id.error())};
}

Capability SystemProbe::ovs_userspace() {
  auto tools = find_ovs_tools();
  if (!tools) return {ProbeStatus::No, tools.error().message};
  auto version = ovs_version(*tools);
  return {ProbeStatus::Yes, tools->vswitchd + (version ? " (Open vSwitch " + *version + ")" : "") +
                                "; its userspace netdev datapath works without the kernel module"};
}

Capability SystemProbe::rxe() {
  const std::string cache = run_root_ + "/rxe-probe";
  if (!root_) {
    if (auto kept = doctor::cached_rxe_support(cache))
      return {kept->usable ? ProbeStatus::Yes : ProbeStatus::No, kept->reason};
    return {ProbeStatus::Unknown, kNeedsRoot};
  }
  const doctor::RxeSupport s = doctor::rxe_support(cache, fresh_);
  return {s.decided ? (s.usable ? ProbeStatus::Yes : ProbeStatus::No) : ProbeStatus::Unknown,
          s.reason};
}

Capability SystemProbe::cgroup(const std::string& controller) {
  const CgroupLayout layout = detect_cgroups();
  if (!layout.usable()) return {ProbeStatus::No, layout.describe()};
  if (!root_) return {ProbeStatus::Unknown, layout.describe() + "; " + kNeedsRoot};
  // Exactly what giving a host a limit takes, in a cgroup of our own, removed straight away.
  const std::string rel = "fabemu-probe-" + std::to_string(::getpid());
  HostLimits limits;
  if (controller == "cpu") limits.cpu = 1.0;
  if (controller == "memory") limits.memory_bytes = 64u << 20;
  auto made = create_cgroup(layout, rel, limits);
  (void)remove_cgroup(layout, rel);
  if (!made) return {ProbeStatus::No, layout.describe() + ": " + describe(made.error())};
  return {ProbeStatus::Yes, layout.describe() + ": a child cgroup took a " + controller + " limit"};
}

std::optional<Capacity> SystemProbe::capacity(bool measure, std::string& why, CapacityKind kind) {
  if (!fresh_ || !measure)
    if (auto kept = kept_capacity(run_root_, kind)) return kept;
  if (!measure) {
    why =
        "not calibrated this boot: `fabemu doctor --calibrate` measures it (~30 s), as does "
        "the first lab with time_scale: auto";
    return std::nullopt;
  }
  if (!root_) {
    why = std::string("calibrating ") + kNeedsRoot;
    return std::nullopt;
  }
  if (!calibrator) {
    why = "not calibrated this boot, and nothing here measures it";
    return std::nullopt;
  }
  // The calibration lab's links have rates only: fq, else htb, else the policer.
  PlanOptions plan;
  plan.fq = fq().yes();
  if (!plan.fq) {
    plan.no_fq_reason = "sch_fq: " + fq().detail;
    plan.htb = htb().yes();
  }
  if (progress)
    progress(std::string("calibrating what this machine carries in real time") +
             (kind == CapacityKind::Gso ? " with GSO super-frames (fabric.gso)" : "") +
             " (once per boot, ~15 s)");
  auto c = calibrator(plan, progress, kind);
  if (!c) {
    why = "calibration failed: " + c.error().what();
    return std::nullopt;
  }
  keep_capacity(run_root_, kind, *c);
  return *c;
}

// Per namespace, like every other net.ipv4 sysctl: present in ours where the kernel has it.
Capability SystemProbe::ecmp_seed() {
  if (::access("/proc/sys/net/ipv4/fib_multipath_hash_seed", F_OK) == 0)
    return {ProbeStatus::Yes,
            "net.ipv4.fib_multipath_hash_seed: each switch hashes flows with a seed of its own"};
  return {ProbeStatus::No,
          "no net.ipv4.fib_multipath_hash_seed (kernel < 6.11): the link model re-hashes each "
          "flow at every port instead"};
}

std::optional<std::vector<std::string>> SystemProbe::congestion_controls() {
  auto text = read_file("/proc/sys/net/ipv4/tcp_allowed_congestion_control");
  if (!text) return std::nullopt;
  std::vector<std::string> out;
  std::string word;
  for (char c : *text + " ") {
    if (c == ' ' || c == '\n' || c == '\t') {
      if (!word.empty()) out.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  return out;
}

}  // namespace fabemu
