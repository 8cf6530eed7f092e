// cgroup management for host limits, v2 (cpu.max, memory.max) or v1 (cfs quota, limit_in_bytes).
#include "apply/cgroup.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <thread>

#include "util/files.h"
#include "util/mountinfo.h"

namespace fabemu {
namespace {

constexpr uint64_t kCpuPeriodUs = 100000;

bool has_word(const std::string& list, const std::string& word) {
  std::istringstream in(list);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

bool has_subdirectory(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_directory(ec)) return true;
  return false;
}

// Every hierarchy that REL lives in, with whether it is the v1 cpu or memory one.
std::vector<std::string> roots(const CgroupLayout& l) {
  if (l.v2) return {l.v2_root};
  std::vector<std::string> r;
  if (!l.cpu_root.empty()) r.push_back(l.cpu_root);
  if (!l.memory_root.empty() && l.memory_root != l.cpu_root) r.push_back(l.memory_root);
  if (!l.freezer_root.empty() && l.freezer_root != l.cpu_root && l.freezer_root != l.memory_root)
    r.push_back(l.freezer_root);
  return r;
}

}  // namespace

std::string CgroupLayout::describe() const {
  if (v2)
    return v2_root.empty() ? "cgroup v2 without cpu+memory controllers" : "cgroup v2 at " + v2_root;
  if (!usable()) return "no cgroup cpu/memory hierarchy mounted";
  return "cgroup v1 (cpu at " + (cpu_root.empty() ? "-" : cpu_root) + ", memory at " +
         (memory_root.empty() ? "-" : memory_root) + ")";
}

CgroupLayout detect_cgroups() {
  CgroupLayout l;
  for (const MountInfo& m : read_mountinfo()) {
    if (m.fstype == "cgroup2") {
      auto ctrl = read_file(m.mount_point + "/cgroup.controllers");
      if (ctrl && has_word(*ctrl, "cpu") && has_word(*ctrl, "memory")) l.v2_root = m.mount_point;
    } else if (m.fstype == "cgroup") {
      auto opts = split_list(m.super_options, ',');
      auto has = [&](const char* c) {
        return std::find(opts.begin(), opts.end(), c) != opts.end();
      };
      if (has("cpu") && l.cpu_root.empty()) l.cpu_root = m.mount_point;
      if (has("memory") && l.memory_root.empty()) l.memory_root = m.mount_point;
      if (has("freezer") && l.freezer_root.empty()) l.freezer_root = m.mount_point;
    }
  }
  if (!l.v2_root.empty()) {
    l.v2 = true;
    l.cpu_root.clear();
    l.memory_root.clear();
    l.freezer_root.clear();
  }
  return l;
}

Result<void> create_cgroup(const CgroupLayout& l, const std::string& rel, const HostLimits& lim) {
  if (!l.usable()) return make_error("creating cgroup " + rel + ": " + l.describe(), ENOTSUP);
  if (l.v2) {
    // Controllers must be enabled in every ancestor's subtree_control.
    std::string dir = l.v2_root;
    std::istringstream parts(rel);
    std::string part;
    while (std::getline(parts, part, '/')) {
      (void)fabemu::write_file(dir + "/cgroup.subtree_control", "+cpu +memory");
      dir += "/" + part;
      FABEMU_TRY(make_dirs(dir));
    }
    if (lim.cpu) {
      auto quota = static_cast<uint64_t>(std::llround(*lim.cpu * kCpuPeriodUs));
      FABEMU_TRY(fabemu::write_file(dir + "/cpu.max",
                                    std::to_string(quota) + " " + std::to_string(kCpuPeriodUs)));
    }
    if (lim.memory_bytes)
      FABEMU_TRY(fabemu::write_file(dir + "/memory.max", std::to_string(*lim.memory_bytes)));
    return ok();
  }
  if (!l.cpu_root.empty()) {
    std::string dir = l.cpu_root + "/" + rel;
    FABEMU_TRY(make_dirs(dir));
    if (lim.cpu) {
      auto quota = static_cast<uint64_t>(std::llround(*lim.cpu * kCpuPeriodUs));
      FABEMU_TRY(fabemu::write_file(dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs)));
      FABEMU_TRY(fabemu::write_file(dir + "/cpu.cfs_quota_us", std::to_string(quota)));
    }
  }
  if (!l.memory_root.empty()) {
    std::string dir = l.memory_root + "/" + rel;
    FABEMU_TRY(make_dirs(dir));
    if (lim.memory_bytes)
      FABEMU_TRY(
          fabemu::write_file(dir + "/memory.limit_in_bytes", std::to_string(*lim.memory_bytes)));
  }
  if (!l.freezer_root.empty()) FABEMU_TRY(make_dirs(l.freezer_root + "/" + rel));
  return ok();
}

Result<void> set_cpu_quota(const CgroupLayout& l, const std::string& rel,
                           std::optional<double> cpu) {
  const std::string quota =
      cpu ? std::to_string(static_cast<uint64_t>(std::llround(*cpu * kCpuPeriodUs))) : "";
  if (l.v2) {
    const std::string dir = l.v2_root + "/" + rel;
    return fabemu::write_file(dir + "/cpu.max",
                              (cpu ? quota : "max") + " " + std::to_string(kCpuPeriodUs));
  }
  if (l.cpu_root.empty()) return make_error("cgroup " + rel + ": no cpu hierarchy", ENOTSUP);
  const std::string dir = l.cpu_root + "/" + rel;
  FABEMU_TRY(fabemu::write_file(dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs)));
  return fabemu::write_file(dir + "/cpu.cfs_quota_us", cpu ? quota : "-1");
}

Result<void> freeze_cgroup(const CgroupLayout& l, const std::string& rel, bool frozen) {
  if (!l.v2 && l.freezer_root.empty())
    return make_error("freezing " + rel +
                          ": no cgroup freezer (neither cgroup v2 nor v1's freezer "
                          "hierarchy is mounted)",
                      ENOTSUP);
  const std::string dir = (l.v2 ? l.v2_root : l.freezer_root) + "/" + rel;
  if (l.v2)
    FABEMU_TRY(fabemu::write_file(dir + "/cgroup.freeze", frozen ? "1" : "0"));
  else
    FABEMU_TRY(fabemu::write_file(dir + "/freezer.state", frozen ? "FROZEN" : "THAWED"));
  if (!frozen) return ok();
  // Frozen once every task has stopped (v2: cgroup.events says "frozen 1"; v1: the state reads
  // FROZEN rather than FREEZING); a task in the middle of a system call takes a moment.
  for (int i = 0; i < 200; ++i) {
    auto state = read_file(dir + (l.v2 ? "/cgroup.events" : "/freezer.state"));
    if (state && state->find(l.v2 ? "frozen 1" : "FROZEN") != std::string::npos) return ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return make_error("freezing " + rel + ": its tasks did not stop within 1 s", ETIMEDOUT);
}

Result<void> remove_cgroup(const CgroupLayout& l, const std::string& rel) {
  for (const auto& root : roots(l)) {
    std::string dir = root + "/" + rel;
    int err = ::rmdir(dir.c_str()) == 0 ? 0 : errno;
    // A leaf whose last tasks are still exiting (their namespaces already gone, so `down` saw
    // them end, but not yet out of the cgroup; a host just thawed takes longest) is busy for a
    // moment: wait for them, up to 2 s. A parent with children is busy for good.
    for (int i = 0; err == EBUSY && i < 200 && !has_subdirectory(dir); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      err = ::rmdir(dir.c_str()) == 0 ? 0 : errno;
    }
    // ENOTEMPTY/EBUSY on a shared parent ("fabemu") that other labs still use is fine.
    if (err && err != ENOENT && err != ENOTEMPTY && err != EBUSY) {
      errno = err;
      return errno_error("removing cgroup " + dir);
    }
  }
  return ok();
}

Result<void> join_cgroup(const CgroupLayout& l, const std::string& rel, int pid) {
  for (const auto& root : roots(l)) {
    std::string dir = root + "/" + rel;
    if (!path_exists(dir)) continue;
    FABEMU_TRY(fabemu::write_file(dir + "/cgroup.procs", std::to_string(pid)));
  }
  return ok();
}

}  // namespace fabemu
