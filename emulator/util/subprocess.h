// Running a program to completion: an argv vector (never a shell string), extra environment,
// a deadline, its output captured.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "util/result.h"

namespace fabemu {

struct CommandOptions {
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) ours
  std::chrono::milliseconds timeout{30000};              // then the process is killed (SIGKILL)
};

// Runs argv[0] (a path, or a name looked up on PATH) with stdin from /dev/null; the child starts
// in the calling thread's namespaces. Returns its standard output when it exits 0; otherwise an
// error naming the program, its exit status and the last lines of its standard error.
Result<std::string> run_command(const std::vector<std::string>& argv,
                                const CommandOptions& options = {});

}  // namespace fabemu
