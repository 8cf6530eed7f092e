// The run root's tmpfs and the lock around it.
#include "apply/run_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "util/files.h"

namespace fabemu {
namespace {

constexpr long kTmpfsMagic = 0x01021994;
constexpr const char* kMountSource = "fabemu";

bool on_tmpfs(const std::string& path) {
  struct statfs fs;
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == kTmpfsMagic;
}

bool empty_dir(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (!d) return false;
  bool empty = true;
  while (dirent* e = ::readdir(d))
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") empty = false;
  ::closedir(d);
  return empty;
}

// Is `path` a mount point of the tmpfs fabemu mounted (source "fabemu")?
bool is_our_mount(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, mnt;
    f >> id >> parent >> dev >> root >> mnt;
    auto dash = line.find(" - ");
    if (mnt != path || dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype, source;
    tail >> fstype >> source;
    if (fstype == "tmpfs" && source == kMountSource) return true;
  }
  return false;
}

}  // namespace

Result<RunLock> RunLock::take(const std::string& run_root) {
  std::string path = run_root + ".lock";
  auto slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) FABEMU_TRY(make_dirs(path.substr(0, slash)));
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return errno_error("opening " + path);
  if (::flock(fd.get(), LOCK_EX) != 0) return errno_error("locking " + path);
  return RunLock(std::move(fd));
}

Result<void> prepare_run_root(const std::string& run_root) {
  FABEMU_TRY(make_dirs(run_root, 0755));
  if (on_tmpfs(run_root)) return ok();
  if (!empty_dir(run_root)) return ok();  // labs from before: keep using the directory as it is
  // Without the right to mount (tests as a user) the directory serves as it is, only slower.
  if (::mount(kMountSource, run_root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0 &&
      errno != EPERM)
    return errno_error("mounting a tmpfs on " + run_root);
  return ok();
}

Result<void> release_run_root(const std::string& run_root) {
  if (!is_our_mount(run_root) || !empty_dir(run_root)) return ok();
  if (::umount2(run_root.c_str(), MNT_DETACH) != 0) return errno_error("unmounting " + run_root);
  ::rmdir(run_root.c_str());
  return ok();
}

}  // namespace fabemu
