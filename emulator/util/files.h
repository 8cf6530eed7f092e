// Small file helpers returning Result: read/write whole files, mkdir -p.
#pragma once

#include <string>

#include "util/result.h"

namespace fabemu {

Result<std::string> read_file(const std::string& path);
// This boot's id (/proc/sys/kernel/random/boot_id, trimmed), "unknown" where it cannot be read:
// what verdicts kept for the rest of a boot are keyed by.
std::string boot_id();
// Writes with O_TRUNC (O_EXCL when `exclusive`); one write(2) so /proc and /sys files work.
Result<void> write_file(const std::string& path, std::string_view content, bool exclusive = false);
Result<void> make_dirs(const std::string& path, mode_t mode = 0755);
// Copies `from` to `to`, replacing what is there.
Result<void> copy_file(const std::string& from, const std::string& to);
bool path_exists(const std::string& path);

}  // namespace fabemu
