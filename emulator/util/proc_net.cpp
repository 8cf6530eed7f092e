// /proc/PID/net/tcp{,6} list the sockets of the namespace PID is in.
#include "util/proc_net.h"

#include <sys/stat.h>

#include <cstdio>
#include <sstream>

#include "util/files.h"

namespace fabemu {

bool listening_in(pid_t pid, const std::string& netns_path, int port) {
  struct stat want, have;
  const std::string proc = "/proc/" + std::to_string(pid);
  if (::stat(netns_path.c_str(), &want) != 0 || ::stat((proc + "/ns/net").c_str(), &have) != 0 ||
      want.st_ino != have.st_ino || want.st_dev != have.st_dev)
    return false;  // not (yet) in there
  char local[16];
  std::snprintf(local, sizeof local, ":%04X", port);
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    auto text = read_file(proc + table);
    if (!text) continue;
    std::istringstream lines(*text);
    std::string line;
    std::getline(lines, line);  // header
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string slot, addr, remote, state;
      fields >> slot >> addr >> remote >> state;
      const size_t colon = addr.rfind(':');
      if (state == "0A" && colon != std::string::npos && addr.substr(colon) == local) return true;
    }
  }
  return false;
}

}  // namespace fabemu
