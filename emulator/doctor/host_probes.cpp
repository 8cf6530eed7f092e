// cgroup and OVS userspace probes: these look at the machine, not at a network namespace.
#include "doctor/host_probes.h"

#include "util/mountinfo.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "util/netlink.h"
#include "util/result.h"

namespace fabemu::doctor {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The file in a child cgroup that setting a limit writes to.
std::string limit_file(const std::string& controller, bool v2) {
  if (controller == "cpu") return v2 ? "cpu.max" : "cpu.cfs_quota_us";
  return v2 ? "memory.max" : "memory.limit_in_bytes";
}

}  // namespace

std::vector<CgroupMount> cgroup_mounts() {
  std::vector<CgroupMount> mounts;
  for (const MountInfo& mi : read_mountinfo()) {
    if (mi.fstype != "cgroup" && mi.fstype != "cgroup2") continue;
    CgroupMount m;
    m.path = mi.mount_point;
    m.v2 = mi.fstype == "cgroup2";
    if (m.v2) {
      std::ifstream controllers(m.path + "/cgroup.controllers");
      for (std::string c; controllers >> c;) m.controllers.push_back(c);
    } else {
      // A v1 mount's super options name its controllers: "rw,cpu,cpuacct".
      m.controllers = split_list(mi.super_options, ',');
    }
    mounts.push_back(std::move(m));
  }
  return mounts;
}

FeatureProbe probe_cgroup(const std::string& controller) {
  FeatureProbe p;
  p.id = "cgroup_" + controller;
  std::vector<CgroupMount> mounts = cgroup_mounts();
  const CgroupMount* chosen = nullptr;
  for (bool want_v2 : {true, false}) {
    for (const CgroupMount& m : mounts)
      if (m.v2 == want_v2 && contains(m.controllers, controller)) {
        chosen = &m;
        break;
      }
    if (chosen) break;
  }
  if (!chosen) {
    p.status = ProbeStatus::No;
    p.detail = "no cgroup2 mount lists " + controller + " in cgroup.controllers and no cgroup v1 " +
               controller + " hierarchy is mounted";
    for (const CgroupMount& m : mounts)
      if (m.v2 && m.controllers.empty()) p.detail += " (cgroup2 at " + m.path + " has none)";
    return p;
  }

  std::string where = std::string(chosen->v2 ? "cgroup v2" : "cgroup v1") + " " + controller +
                      " at " + chosen->path;
  // Creating a child is exactly what giving a host a limit takes; remove it straight away.
  std::string child = chosen->path + "/fabemu-probe-" + std::to_string(::getpid());
  if (::mkdir(child.c_str(), 0755) != 0) {
    p.status = ProbeStatus::No;
    p.detail = where + ", but " + describe(errno_error("mkdir " + child));
    return p;
  }
  std::string file = limit_file(controller, chosen->v2);
  bool settable = exists(child + "/" + file);
  std::string removed;
  if (::rmdir(child.c_str()) != 0) removed = "; " + describe(errno_error("rmdir " + child));

  if (settable) {
    p.status = ProbeStatus::Yes;
    p.detail = where + ": created a child cgroup with " + file + removed;
  } else {
    // On v2 a child only gets the controller's files once the parent delegates it.
    p.status = ProbeStatus::Partial;
    p.detail = where + ", but a child cgroup has no " + file +
               (chosen->v2 ? " (" + controller + " not in cgroup.subtree_control)" : "") + removed;
  }
  return p;
}

FeatureProbe probe_ovs_userspace() {
  FeatureProbe p;
  p.id = "ovs_userspace";
  // Debian puts ovs-vswitchd in /usr/sbin, which a normal user's PATH often lacks.
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) dirs = split_list(path, ':');
  for (const char* sbin : {"/usr/local/sbin", "/usr/sbin", "/sbin"})
    if (!contains(dirs, sbin)) dirs.push_back(sbin);
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/ovs-vswitchd";
    if (::access(candidate.c_str(), X_OK) == 0) {
      p.status = ProbeStatus::Yes;
      p.detail = candidate + "; its userspace netdev datapath works without the kernel module";
      return p;
    }
  }
  p.status = ProbeStatus::No;
  p.detail = "ovs-vswitchd not found on PATH or in /usr/sbin";
  return p;
}

}  // namespace fabemu::doctor
