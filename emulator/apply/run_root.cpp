// Run root lock and per-lab tmpfs.
#include "apply/run_root.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include "util/files.h"

namespace fabemu {

Result<RunLock> RunLock::take(const std::string& run_root) {
  FABEMU_TRY(make_dirs(run_root));
  std::string path = run_root + "/.lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return errno_error("opening " + path);
  if (::flock(fd.get(), LOCK_EX) != 0) return errno_error("locking " + path);
  return RunLock(std::move(fd));
}

namespace {

std::string agent_lock_path(const std::string& run_root, const std::string& lab) {
  return run_root + "/.agent-" + lab;
}

}  // namespace

Result<AgentLock> AgentLock::take(const std::string& run_root, const std::string& lab) {
  FABEMU_TRY(make_dirs(run_root));
  const std::string path = agent_lock_path(run_root, lab);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return errno_error("opening " + path);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return make_error("another fabemu agent works on lab " + lab + " here (" + path + ")", EBUSY);
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0 || ::pwrite(fd.get(), pid.data(), pid.size(), 0) < 0)
    return errno_error("writing " + path);
  return AgentLock(std::move(fd));
}

Result<int> stop_agent(const std::string& run_root, const std::string& lab) {
  const std::string path = agent_lock_path(run_root, lab);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return errno == ENOENT ? Result<int>(0) : errno_error("opening " + path);
  int killed = 0;
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    // Held: the pid in the file is the holder's (written right after it took the lock).
    char buf[32] = {};
    const ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
    const pid_t pid = n > 0 ? static_cast<pid_t>(std::atoi(buf)) : 0;
    if (pid > 1 && ::kill(pid, SIGKILL) == 0) killed = 1;
    if (::flock(fd.get(), LOCK_EX) != 0) return errno_error("locking " + path);
  }
  ::unlink(path.c_str());
  return killed;
}

Result<void> mount_tmpfs(const std::string& dir, const std::string& source) {
  if (::mount(source.c_str(), dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
    return errno_error("mounting a tmpfs on " + dir);
  if (::mount("", dir.c_str(), nullptr, MS_PRIVATE, nullptr) != 0 ||
      ::mount("", dir.c_str(), nullptr, MS_SHARED, nullptr) != 0) {
    Error e = errno_error("making " + dir + " a shared mount");
    ::umount2(dir.c_str(), MNT_DETACH);
    return e;
  }
  return ok();
}

Result<void> unmount_tree(const std::string& dir) {
  // One detach of the tree costs one RCU grace period, where unmounting a thousand pins one
  // by one costs a thousand (0.01 s against 0.4 s for a 512-host lab).
  if (::umount2(dir.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
    return errno_error("unmounting " + dir);
  return ok();
}

}  // namespace fabemu
