// The hosts' private /tmp, said where it bites: a command naming a file of the machine's /tmp
// that the host's own /tmp does not have.
#pragma once

#include <string>
#include <vector>

#include "runtime/host_env.h"
#include "util/result.h"

namespace fabemu {

// An error naming the host's private /tmp, the word and the ways out when a word of `argv` is a
// path under /tmp/ that the machine's /tmp (`machine_tmp`) has and the host's (c.tmp_dir) does
// not, unless it is under `cwd`, which the host sees at the same path (enter_node). OK for a
// host that shares the machine's /tmp and for a switch.
Result<void> check_private_tmp(const NodeContext& c, const std::vector<std::string>& argv,
                               const std::string& cwd, const std::string& machine_tmp = "/tmp");

}  // namespace fabemu
