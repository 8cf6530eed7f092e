// Named namespaces pinned by bind mounts.
#include "util/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <thread>

#include "util/files.h"

namespace fabemu {

namespace {

Result<void> pin(const char* proc_path, const std::string& target) {
  UniqueFd fd(::open(target.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0));
  if (!fd.valid()) return errno_error("creating " + target);
  fd.reset();
  if (::mount(proc_path, target.c_str(), "none", MS_BIND, nullptr) != 0) {
    Error e = errno_error("pinning namespace at " + target);
    ::unlink(target.c_str());
    return e;
  }
  return ok();
}

}  // namespace

int unshare_retrying(int flags) {
  for (int attempt = 0;; ++attempt) {
    if (::unshare(flags) == 0) return 0;
    if (errno != ENODEV || attempt == 50) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Result<UniqueFd> create_pinned_namespace(const std::string& net_path, const std::string& uts_path,
                                         const std::string& hostname) {
  int flags = CLONE_NEWNET | (uts_path.empty() ? 0 : CLONE_NEWUTS);
  if (unshare_retrying(flags) != 0) return errno_error("creating namespace " + net_path);
  if (!uts_path.empty()) {
    if (::sethostname(hostname.data(), hostname.size()) != 0)
      return errno_error("setting hostname " + hostname);
    FABEMU_TRY(pin("/proc/thread-self/ns/uts", uts_path));
  }
  FABEMU_TRY(pin("/proc/thread-self/ns/net", net_path));
  UniqueFd fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno_error("opening namespace " + net_path);
  return fd;
}

Result<void> unpin_namespace(const std::string& path) {
  if (::umount2(path.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
    return errno_error("unmounting " + path);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("removing " + path);
  return ok();
}

Result<UniqueFd> open_namespace(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno_error("opening namespace " + path);
  return fd;
}

Result<void> enter_namespace(int fd, int nstype, const std::string& what) {
  if (::setns(fd, nstype) != 0) return errno_error("entering namespace " + what);
  return ok();
}

Result<void> enter_private_mounts() {
  if (::unshare(CLONE_NEWNS) != 0) return errno_error("creating a mount namespace");
  if (::mount("", "/", "none", MS_SLAVE | MS_REC, nullptr) != 0)
    return errno_error("making / a slave mount");
  return ok();
}

Result<void> bind_mount(const std::string& from, const std::string& to) {
  if (::mount(from.c_str(), to.c_str(), "none", MS_BIND, nullptr) != 0)
    return errno_error("bind-mounting " + from + " on " + to);
  return ok();
}

Result<void> run_in_netns(const std::string& path, const std::function<Result<void>()>& f) {
  std::optional<Result<void>> out;
  std::thread worker([&] {
    auto fd = open_namespace(path);
    if (!fd) return void(out.emplace(fd.error()));
    if (auto r = enter_namespace(fd->get(), CLONE_NEWNET, path); !r)
      return void(out.emplace(r.error()));
    out.emplace(f());
  });
  worker.join();
  return std::move(*out);
}

}  // namespace fabemu
