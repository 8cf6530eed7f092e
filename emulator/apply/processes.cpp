// Process discovery by namespace inode, via /proc/PID/ns/{net,uts}.
#include "apply/processes.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>

namespace fabemu {
namespace {

using NsId = std::pair<dev_t, ino_t>;

std::set<NsId> ns_ids(const std::vector<std::string>& paths) {
  std::set<NsId> ids;
  for (const auto& p : paths) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0) ids.insert({st.st_dev, st.st_ino});
  }
  return ids;
}

// Whether any thread of the process at /proc/PID is in one of `ids`: a thread can setns()
// on its own, and it keeps the namespace alive as well as a whole process does.
bool in_namespaces(const std::string& proc_dir, const std::set<NsId>& ids) {
  DIR* tasks = ::opendir((proc_dir + "/task").c_str());
  if (!tasks) return false;
  bool found = false;
  while (dirent* t = ::readdir(tasks)) {
    if (found || t->d_name[0] == '.') continue;
    for (const char* kind : {"net", "uts"}) {
      struct stat st;
      std::string p = proc_dir + "/task/" + t->d_name + "/ns/" + kind;
      if (::stat(p.c_str(), &st) == 0 && ids.count({st.st_dev, st.st_ino})) found = true;
    }
  }
  ::closedir(tasks);
  return found;
}

}  // namespace

std::vector<int> processes_in_namespaces(const std::vector<std::string>& ns_paths) {
  std::vector<int> pids;
  auto ids = ns_ids(ns_paths);
  if (ids.empty()) return pids;
  const int self = ::getpid();
  DIR* d = ::opendir("/proc");
  if (!d) return pids;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == self) continue;
    if (in_namespaces(std::string("/proc/") + e->d_name, ids))
      pids.push_back(static_cast<int>(pid));
  }
  ::closedir(d);
  return pids;
}

Result<void> kill_processes_in_namespaces(const std::vector<std::string>& ns_paths) {
  using namespace std::chrono;
  auto pids = processes_in_namespaces(ns_paths);
  if (pids.empty()) return ok();
  for (int sig : {SIGTERM, SIGKILL}) {
    for (int pid : pids) ::kill(pid, sig);
    auto deadline = steady_clock::now() + (sig == SIGTERM ? seconds(2) : seconds(5));
    while (steady_clock::now() < deadline) {
      pids = processes_in_namespaces(ns_paths);
      if (pids.empty()) return ok();
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
  return make_error(std::to_string(pids.size()) + " processes inside the lab survived SIGKILL",
                    EBUSY);
}

}  // namespace fabemu
