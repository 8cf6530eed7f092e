// fabemu's run directory: journals, namespace pins and per-host files, kept on a tmpfs.
#pragma once

#include <string>

#include "util/result.h"
#include "util/unique_fd.h"

namespace fabemu {

// Serialises `up` and `down` between processes (pool choice, journal creation, the tmpfs).
class RunLock {
 public:
  static Result<RunLock> take(const std::string& run_root);

 private:
  explicit RunLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;  // closing it releases the lock
};

// Makes run_root exist on a tmpfs. Where /run is a tmpfs it already is; elsewhere (a disk-
// backed /run makes every file a lab creates cost a journal write) fabemu mounts a tmpfs named
// "fabemu" on the empty directory. Call with the RunLock held.
Result<void> prepare_run_root(const std::string& run_root);

// Unmounts fabemu's own tmpfs once no lab is left in it. Call with the RunLock held.
Result<void> release_run_root(const std::string& run_root);

}  // namespace fabemu
