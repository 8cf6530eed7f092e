// cgroups for hosts: cpu quota and memory limit, on cgroup v2 or the v1 cpu/memory hierarchies.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "util/result.h"

namespace fabemu {

struct CgroupLayout {
  bool v2 = false;
  std::string v2_root;                // cgroup2 mount with cpu+memory controllers
  std::string cpu_root, memory_root;  // v1 hierarchies
  std::string freezer_root;           // v1's freezer (v2 has cgroup.freeze in every cgroup)
  bool usable() const { return v2 ? !v2_root.empty() : !cpu_root.empty() || !memory_root.empty(); }
  std::string describe() const;
};

// Reads /proc/self/mountinfo and the controllers each mount offers.
CgroupLayout detect_cgroups();

// Creates REL (e.g. "fabemu/lab/h3") under every hierarchy, parents included, with limits.
Result<void> create_cgroup(const CgroupLayout& layout, const std::string& rel,
                           const HostLimits& limits);
// Changes REL's CPU quota live (CPUs; unset: unlimited): a straggler fault and its end.
Result<void> set_cpu_quota(const CgroupLayout& layout, const std::string& rel,
                           std::optional<double> cpu);
// Removes REL where it exists (it must hold no processes).
Result<void> remove_cgroup(const CgroupLayout& layout, const std::string& rel);
// The freezer (v2's cgroup.freeze, v1's freezer.state): every task of REL stopped (returns
// once they are) or running again.
Result<void> freeze_cgroup(const CgroupLayout& layout, const std::string& rel, bool frozen);
// Moves process `pid` into REL in every hierarchy where REL exists.
Result<void> join_cgroup(const CgroupLayout& layout, const std::string& rel, int pid);

}  // namespace fabemu
