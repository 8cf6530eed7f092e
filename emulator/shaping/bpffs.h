// Where a lab's link-model maps are pinned in bpffs, and making or removing that place.
#pragma once

#include <string>

#include "plan/lab_paths.h"
#include "util/result.h"

namespace fabemu {

// Mounts a bpf filesystem at `root` unless one is there already (systemd usually mounts
// /sys/fs/bpf; minimal systems and containers may not).
Result<void> ensure_bpffs(const std::string& root = kBpffsRoot);

// Creates `dir` and its parents, and checks that it lies on a bpf filesystem.
Result<void> make_pin_dir(const std::string& dir);

// Unpins everything in `dir` and removes it (and its parent "fabemu" dir when that is empty);
// fine when it does not exist. Maps go once no program or process holds them.
Result<void> remove_pin_dir(const std::string& dir);

}  // namespace fabemu
