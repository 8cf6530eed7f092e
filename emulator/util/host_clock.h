// Programs' own clocks in the real fabric's time (`hosts: {clock: fabric}`, `exec --clock`):
// libfaketime slows CLOCK_REALTIME and CLOCK_MONOTONIC N times and stretches sleeps and poll,
// select and epoll timeouts N times; fabemu's libfabemu-clockwait.so does the same for the
// timed waits libfaketime leaves alone. docs/time-dilation.md lists what it covers, and not.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace fabemu {

struct ClockLibraries {
  std::string faketime;   // libfaketime.so.1
  std::string clockwait;  // libfabemu-clockwait.so
};

// Where Debian's and Ubuntu's libfaketime package puts it, and /usr/local for one built from
// source.
inline const std::vector<std::string> kFaketimeDirs = {
    "/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime",
    "/usr/lib/faketime", "/usr/local/lib/faketime"};

// Where the two libraries are on this machine: libfaketime in the first of `faketime_dirs`
// that has it, fabemu's beside `fabemu_exe` (clock/, the build tree) or in ../lib/fabemu
// (installed). EOPNOTSUPP naming the package (or fabemu's file) when one is missing.
Result<ClockLibraries> find_clock_libraries(
    const std::string& fabemu_exe, const std::vector<std::string>& faketime_dirs = kFaketimeDirs);

// The environment that puts a program on the real fabric's clock in a lab dilated `factor`
// times: the libraries preloaded ahead of `ld_preload` (the caller's own LD_PRELOAD, kept), the
// slowed clock from the program's start (FAKETIME "+0 x1/N"), file times left as they are.
std::vector<std::pair<std::string, std::string>> fabric_clock_env(double factor,
                                                                  const ClockLibraries& libs,
                                                                  std::string_view ld_preload);

}  // namespace fabemu
