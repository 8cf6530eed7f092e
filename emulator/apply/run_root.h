// The run root's lock, and the tmpfs each lab's run dir lives on.
#pragma once

#include <string>

#include "util/result.h"
#include "util/unique_fd.h"

namespace fabemu {

// Serialises `up` and `down` between processes (pool choice, run dir and journal creation).
class RunLock {
 public:
  static Result<RunLock> take(const std::string& run_root);

 private:
  explicit RunLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;  // closing it releases the lock
};

// Mounts a tmpfs named `source` on `dir` as a shared mount of its own peer group, so that an
// unmount also reaches the copies other mount namespaces (our `exec`s) hold.
Result<void> mount_tmpfs(const std::string& dir, const std::string& source);

// Detaches the mount at `dir` with every mount below it; fine when nothing is mounted there.
Result<void> unmount_tree(const std::string& dir);

}  // namespace fabemu
