// The running lab as live changes see it: its link model's ports, its switches' routes around
// failed links, its hosts' processes and cgroups, partition rules. `link set/down/up`, `host`
// and the fault timeline change a lab only through this interface: the kernel's implementation
// below, an in-memory one in the unit tests (tests/unit/fake_datapath.h), so that the logic of
// every live change runs without root.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/lab_model.h"
#include "plan/lab_paths.h"
#include "plan/plan.h"
#include "shaping/link_shaper.h"
#include "util/result.h"

namespace fabemu {

class LabDatapath {
 public:
  virtual ~LabDatapath() = default;

  // Opens the link model now (the kernel's loads and verifies its maps, ~15 ms), not at the
  // first change: before a workload keeps every CPU busy.
  virtual Result<void> open_link_model() = 0;
  // The link model's mode (fq, htb or policer), as `up` chose it.
  virtual Result<PlanOptions> link_mode() = 0;
  // What port `ifindex` enforces now; ENOENT when the link model is not on it.
  virtual Result<fabemu_link_cfg> port_config(uint32_t ifindex) = 0;
  // A new config for a port that has the link model: the next packet sees it.
  virtual Result<void> set_port(const ShapePort& port) = 0;
  // The link model put on a port (in namespace `netns`) that had none.
  virtual Result<void> attach_port(const std::string& netns, const ShapePort& port) = 0;
  // The port's root qdisc follows its new config: fq grown (grow_fq), htb added, changed or
  // removed (had_htb: there was one).
  virtual Result<void> resize_port_qdisc(const std::string& netns, const ShapePort& port,
                                         bool grow_fq, bool had_htb) = 0;

  // Marks `links` failed (or repaired) and moves every local switch's routes around the failed
  // set; says what changed (Rerouter::set_failed).
  virtual Result<std::string> set_failed_links(const std::vector<int>& links, bool failed) = 0;

  // Every process in the host killed (SIGKILL); how many.
  virtual Result<int> kill_host_processes(const std::string& host) = 0;
  virtual Result<void> freeze_host(const std::string& host, bool frozen) = 0;
  // The host's cgroup CPU quota (cores), or none.
  virtual Result<void> set_cpu_quota(const std::string& host, std::optional<double> cpu) = 0;
  // Policy rules dropping what goes from .first to .second, added (cut) or removed, in switch
  // `sw`'s namespace.
  virtual Result<void> partition_rules(int sw, const std::vector<std::pair<Prefix, Prefix>>& rules,
                                       bool cut) = 0;
};

// The kernel's: the lab's pinned maps (`open` when the caller holds them, else opened at the
// first use), netlink in the nodes' namespaces, cgroups, signals.
std::unique_ptr<LabDatapath> kernel_datapath(const LabModel& model, const LabPaths& paths,
                                             LinkShaper* open = nullptr);

}  // namespace fabemu
