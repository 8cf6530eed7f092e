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

// Held by the agent that builds or runs this machine's part of a lab across machines (`fabemu
// agent`), with its pid in the file: `down` on the machine stops the holder first, so that
// taking a lab down while its launcher was killed mid-`up` (its agents carrying on) leaves
// nothing behind.
class AgentLock {
 public:
  static Result<AgentLock> take(const std::string& run_root, const std::string& lab);

 private:
  explicit AgentLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

// Kills the agent holding lab's AgentLock, if one does, and waits until the lock is free. The
// pid it kills: how many (0 or 1).
Result<int> stop_agent(const std::string& run_root, const std::string& lab);

// Mounts a tmpfs named `source` on `dir` as a shared mount of its own peer group, so that an
// unmount also reaches the copies other mount namespaces (our `exec`s) hold.
Result<void> mount_tmpfs(const std::string& dir, const std::string& source);

// Detaches the mount at `dir` with every mount below it; fine when nothing is mounted there.
Result<void> unmount_tree(const std::string& dir);

}  // namespace fabemu
