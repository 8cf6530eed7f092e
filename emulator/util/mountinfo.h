// The mount table of this process's mount namespace, from /proc/self/mountinfo.
#pragma once

#include <string>
#include <vector>

namespace fabemu {

struct MountInfo {
  std::string mount_point;    // unescaped: "/sys/fs/cgroup/cpu"
  std::string fstype;         // "cgroup", "cgroup2", "tmpfs", ...
  std::string source;         // "cgroup", "fabemu", "/dev/vda", ...
  std::string super_options;  // "rw,cpu,cpuacct"
};

std::vector<MountInfo> read_mountinfo();

// Splits "a,b,,c" on `sep`, dropping empty parts.
std::vector<std::string> split_list(const std::string& s, char sep);

}  // namespace fabemu
