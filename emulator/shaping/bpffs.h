// Where a lab's link-model maps are pinned in bpffs, and making or removing that place.
#pragma once

#include <string>

#include "util/result.h"

namespace fabemu {

inline constexpr char kBpffsRoot[] = "/sys/fs/bpf";

// <root>/fabemu/<lab>: the maps of one lab, shared by every fabemu process working on it.
std::string lab_pin_dir(const std::string& lab, const std::string& bpffs_root = kBpffsRoot);

// Mounts a bpf filesystem at `root` unless one is there already (systemd usually mounts
// /sys/fs/bpf; minimal systems and containers may not).
Result<void> ensure_bpffs(const std::string& root = kBpffsRoot);

// Creates `dir` and its parents, and checks that it lies on a bpf filesystem.
Result<void> make_pin_dir(const std::string& dir);

// Unpins everything in `dir` and removes it (and its parent "fabemu" dir when that is empty);
// fine when it does not exist. Maps go once no program or process holds them.
Result<void> remove_pin_dir(const std::string& dir);

}  // namespace fabemu
