// Checking a command's /tmp paths against a host's private /tmp.
#include "runtime/private_tmp.h"

#include "util/files.h"

namespace fabemu {

Result<void> check_private_tmp(const NodeContext& c, const std::vector<std::string>& argv,
                               const std::string& cwd, const std::string& machine_tmp) {
  if (c.tmp_dir.empty()) return ok();
  const std::string tmp = "/tmp/";
  const bool cwd_bound = cwd.compare(0, tmp.size(), tmp) == 0;
  for (const std::string& word : argv) {
    if (word.compare(0, tmp.size(), tmp) != 0 || word.size() == tmp.size()) continue;
    if (cwd_bound && word.compare(0, cwd.size() + 1, cwd + "/") == 0) continue;
    const std::string rest = word.substr(tmp.size());
    if (!path_exists(machine_tmp + "/" + rest) || path_exists(c.tmp_dir + "/" + rest)) continue;
    std::string shared;
    for (const auto& [k, v] : c.env)
      if (k == "FABEMU_SHARED_DIR") shared = v;
    return make_error(
        word + " is in this machine's /tmp, not in " + c.node + "'s: every host has a private " +
        "/tmp (" + c.tmp_dir + " here). Put the file in the lab's shared directory " +
        "($FABEMU_SHARED_DIR, " + shared + ") or elsewhere outside /tmp, or give the " +
        "scenario hosts: {tmp: shared} (docs/scenario.md)");
  }
  return ok();
}

}  // namespace fabemu
