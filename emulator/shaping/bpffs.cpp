// bpffs pin directories for the link model's maps.
#include "shaping/bpffs.h"

#include <bpf/bpf.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace fabemu {

namespace {

bool on_bpffs(const std::string& path) {
  struct statfs st {};
  return ::statfs(path.c_str(), &st) == 0 &&
         st.f_type == static_cast<decltype(st.f_type)>(BPF_FS_MAGIC);
}

}  // namespace

Result<void> ensure_bpffs(const std::string& root) {
  if (on_bpffs(root)) return ok();
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec) return make_error("creating " + root, ec.value());
  if (::mount("bpf", root.c_str(), "bpf", 0, "mode=0700") != 0)
    return errno_error("mounting a bpf filesystem at " + root);
  return ok();
}

Result<void> make_pin_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error("creating BPF pin directory " + dir, ec.value());
  if (!on_bpffs(dir))
    return make_error("BPF pin directory " + dir + " is not on a bpf filesystem (mount -t bpf)",
                      ENOTSUP);
  return ok();
}

Result<void> remove_pin_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return ok();
  const std::string qdisc = dir + "/" + kPfcQdiscPin;
  if (fs::exists(qdisc, ec)) {
    // Registered without a link, the struct_ops map holds itself: deleting its one element
    // unregisters the kind, which unpinning alone would not.
    const int fd = bpf_obj_get(qdisc.c_str());
    if (fd >= 0) {
      const uint32_t key = 0;
      (void)bpf_map_delete_elem(fd, &key);
      ::close(fd);
    }
  }
  // Pins are files directly in the directory; bpffs refuses recursive tricks anyway.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!fs::remove(e.path(), ec) && ec)
      return make_error("unpinning " + e.path().string(), ec.value());
  }
  if (ec) return make_error("listing " + dir, ec.value());
  if (!fs::remove(dir, ec) && ec) return make_error("removing " + dir, ec.value());
  fs::path parent = fs::path(dir).parent_path();
  if (parent.filename() == "fabemu" && fs::is_empty(parent, ec)) fs::remove(parent, ec);
  return ok();
}

}  // namespace fabemu
