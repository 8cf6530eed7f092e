// File helpers.
#include "util/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "util/unique_fd.h"

namespace fabemu {

Result<std::string> read_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno_error("opening " + path);
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error("reading " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<void> write_file(const std::string& path, std::string_view content, bool exclusive) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
  UniqueFd fd(::open(path.c_str(), flags, 0644));
  if (!fd.valid()) return errno_error("opening " + path);
  while (!content.empty()) {
    ssize_t n = ::write(fd.get(), content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error("writing " + path);
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
  return ok();
}

Result<void> make_dirs(const std::string& path, mode_t mode) {
  if (path.empty()) return ok();
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) return ok();
  if (errno != ENOENT) return errno_error("creating directory " + path);
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return errno_error("creating directory " + path);
  FABEMU_TRY(make_dirs(path.substr(0, slash), mode));
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
    return errno_error("creating directory " + path);
  return ok();
}

Result<void> copy_file(const std::string& from, const std::string& to) {
  std::error_code ec;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return make_error("copying " + from + " to " + to + ": " + ec.message(), ec.value());
  return ok();
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string boot_id() {
  auto boot = read_file("/proc/sys/kernel/random/boot_id");
  std::string id = boot ? *boot : "unknown";
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

}  // namespace fabemu
