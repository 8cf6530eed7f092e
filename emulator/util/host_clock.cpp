// Finding libfaketime and fabemu's clockwait library, and the environment that preloads them.
#include "util/host_clock.h"

#include <cstdio>

#include "util/files.h"

namespace fabemu {

namespace {

// The first of `paths` that exists; empty when none does.
std::string first_existing(const std::vector<std::string>& paths) {
  for (const std::string& p : paths)
    if (path_exists(p)) return p;
  return {};
}

}  // namespace

Result<ClockLibraries> find_clock_libraries(const std::string& fabemu_exe,
                                            const std::vector<std::string>& faketime_dirs) {
  ClockLibraries libs;
  // The single-threaded build: libfaketimeMT serialises every clock read through one mutex
  // (bench/fabric_clock.py measures the cost), for state that a fixed FAKETIME never changes.
  std::vector<std::string> faketime;
  for (const std::string& dir : faketime_dirs) faketime.push_back(dir + "/libfaketime.so.1");
  libs.faketime = first_existing(faketime);
  if (libs.faketime.empty())
    return make_error(
        "hosts.clock: fabric needs libfaketime, which this machine lacks: install the "
        "libfaketime package (apt-get install libfaketime)",
        EOPNOTSUPP);
  const std::string dir = fabemu_exe.substr(0, fabemu_exe.rfind('/') + 1);
  libs.clockwait = first_existing(
      {dir + "clock/libfabemu-clockwait.so", dir + "../lib/fabemu/libfabemu-clockwait.so"});
  if (libs.clockwait.empty())
    return make_error(
        "hosts.clock: fabric needs fabemu's libfabemu-clockwait.so, which is "
        "neither in " +
            dir + "clock/ nor in " + dir + "../lib/fabemu/: build or install fabemu whole",
        EOPNOTSUPP);
  return libs;
}

std::vector<std::pair<std::string, std::string>> fabric_clock_env(double factor,
                                                                  const ClockLibraries& libs,
                                                                  std::string_view ld_preload) {
  std::string preload = libs.faketime + ":" + libs.clockwait;
  if (!ld_preload.empty()) preload += ":" + std::string(ld_preload);
  // libfaketime reads the rate with atof before the program can change its locale: a '.'.
  char rate[64];
  std::snprintf(rate, sizeof rate, "+0 x%.12g", 1.0 / factor);
  return {
      {"LD_PRELOAD", preload},
      {"FAKETIME", rate},
      // Both clocks: CLOCK_MONOTONIC is what programs time themselves with.
      {"FAKETIME_DONT_FAKE_MONOTONIC", "0"},
      // File times are the file system's: slowed, they would make sources look older than
      // their compiled caches (Python's .pyc, make's targets).
      {"NO_FAKE_STAT", "1"},
  };
}

}  // namespace fabemu
