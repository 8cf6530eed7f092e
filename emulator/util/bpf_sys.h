// The bpf() system call for what libbpf 1.1 (Debian 12) has no API for: tcx attach and query.
#pragma once

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace fabemu {

// tcx arrived with Linux 6.6; Debian 12's uapi headers (6.1) do not name it yet, and the kernel
// is the judge of whether it exists, not the headers we were built with.
inline constexpr uint32_t kBpfTcxIngress = 46;
inline constexpr uint32_t kBpfTcxEgress = 47;

inline long sys_bpf(int cmd, bpf_attr* attr) {
  return ::syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

}  // namespace fabemu
