// Probes of the machine rather than the network stack: cgroup controllers and OVS userspace.
#pragma once

#include <string>
#include <vector>

#include "doctor/probe.h"

namespace fabemu::doctor {

struct CgroupMount {
  std::string path;                      // "/sys/fs/cgroup/cpu"
  bool v2 = false;                       // cgroup2, else a v1 hierarchy
  std::vector<std::string> controllers;  // v2: cgroup.controllers; v1: the mount's controllers
};

// Every cgroup mount in /proc/self/mountinfo, in mount order.
std::vector<CgroupMount> cgroup_mounts();

// "cgroup_cpu" for "cpu", "cgroup_memory" for "memory": finds a hierarchy with the controller
// (v2 preferred), then creates and removes a child cgroup fabemu-probe-<pid> to prove that limits
// can be set there. Fills id, status and detail.
FeatureProbe probe_cgroup(const std::string& controller);

// "ovs_userspace": whether ovs-vswitchd is installed. No root needed.
FeatureProbe probe_ovs_userspace();

}  // namespace fabemu::doctor
