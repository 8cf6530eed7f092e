// Where a lab's link-model maps are pinned in bpffs, and making or removing that place.
#pragma once

#include <string>

#include "plan/lab_paths.h"
#include "util/result.h"

namespace fabemu {

// The pin of a lab's registered PFC qdisc (a struct_ops map) in its pin dir.
inline constexpr const char* kPfcQdiscPin = "fabemu_pfcq";

// Mounts a bpf filesystem at `root` unless one is there already (systemd usually mounts
// /sys/fs/bpf; minimal systems and containers may not).
Result<void> ensure_bpffs(const std::string& root = kBpffsRoot);

// Creates `dir` and its parents, and checks that it lies on a bpf filesystem.
Result<void> make_pin_dir(const std::string& dir);

// Unpins everything in `dir` and removes it (and its parent "fabemu" dir when that is empty);
// fine when it does not exist. Maps go once no program or process holds them; a registered
// PFC qdisc (kPfcQdiscPin) is unregistered first (qdiscs still using it keep working).
Result<void> remove_pin_dir(const std::string& dir);

}  // namespace fabemu
