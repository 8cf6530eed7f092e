// Process discovery by namespace inode, via /proc/PID/ns/{net,uts}.
#include "apply/processes.h"

#include <dirent.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "util/netlink.h"
#include "util/netns.h"

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

// The start time of /proc/PID (field 22 of its stat, in clock ticks since boot), 0 when there
// is no such process: with the PID it names one process, even after the PID is reused.
uint64_t start_time(int pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return 0;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // The command name (field 2) may hold spaces and ')': the fields after it follow the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  unsigned long long start = 0;
  if (std::sscanf(p + 2,
                  "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
                  "%*d %llu",
                  &start) != 1)
    return 0;
  return start;
}

// Until every process in `procs` has been reaped (a killed daemon stays a zombie until its
// parent, often PID 1, waits for it, and `pgrep` still lists it), or `bound` has passed.
void wait_reaped(const std::map<int, uint64_t>& procs, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (const auto& [pid, start] : procs)
    while (start_time(pid) == start && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

// TCP states whose sockets hold their namespace: all but LISTEN (its process held it),
// TIME_WAIT and CLOSE (the kernel ends those as it frees the namespace).
constexpr uint32_t kHoldingStates = 0xfff & ~((1u << 10) | (1u << 6) | (1u << 7));

// Aborts every holding TCP socket of one family in the calling thread's namespace.
Result<size_t> abort_tcp_sockets(NetlinkSocket& diag, uint8_t family) {
  NetlinkMessage dump(SOCK_DIAG_BY_FAMILY, NLM_F_DUMP);
  inet_diag_req_v2 req{};
  req.sdiag_family = family;
  req.sdiag_protocol = IPPROTO_TCP;
  req.idiag_states = kHoldingStates;
  dump.put_header(req);
  auto sockets = diag.transact(dump, "listing TCP sockets");
  if (!sockets) return sockets.error();
  size_t aborted = 0;
  for (const std::string& payload : *sockets) {
    if (payload.size() < sizeof(inet_diag_msg)) continue;
    inet_diag_msg msg;
    std::memcpy(&msg, payload.data(), sizeof msg);
    NetlinkMessage destroy(SOCK_DESTROY, 0);
    req.sdiag_family = msg.idiag_family;
    req.idiag_states = ~0u;
    req.id = msg.id;
    destroy.put_header(req);
    if (auto r = diag.transact(destroy, "aborting a TCP socket"); r)
      ++aborted;
    else if (errno_of(r.error()) != ENOENT)  // gone meanwhile: fine
      return r.error();
  }
  return aborted;
}

// How many TCP sockets (hashed: open, closing or orphaned; not TIME_WAIT) the calling thread's
// namespace has of `family`, from /proc/thread-self/net/sockstat(6): a dump walks the kernel's
// whole socket hash, 3 ms each on a machine of 24 GiB, and most namespaces have none.
long tcp_in_use(uint8_t family) {
  const bool v6 = family == AF_INET6;
  FILE* f =
      std::fopen(v6 ? "/proc/thread-self/net/sockstat6" : "/proc/thread-self/net/sockstat", "r");
  if (!f) return -1;  // unknown: dump
  long n = -1;
  char line[256];
  while (n < 0 && std::fgets(line, sizeof line, f))
    if (std::sscanf(line, v6 ? "TCP6: inuse %ld" : "TCP: inuse %ld", &n) != 1) n = -1;
  std::fclose(f);
  return n;
}

}  // namespace

Result<size_t> abort_tcp_sockets_in_namespaces(const std::vector<std::string>& ns_paths) {
  // One thread of our own walks the namespaces (a socket belongs to the namespace it was opened
  // in) and dies with the last one's reference.
  Result<size_t> out = size_t{0};
  std::thread worker([&] {
    size_t aborted = 0;
    for (const std::string& path : ns_paths) {
      auto ns = open_namespace(path);
      if (!ns) continue;  // not pinned (any more): nothing of ours to abort there
      if (auto r = enter_namespace(ns->get(), CLONE_NEWNET, path); !r) return void(out = r.error());
      std::optional<NetlinkSocket> diag;
      for (uint8_t family : {AF_INET, AF_INET6}) {
        if (tcp_in_use(family) == 0) continue;
        if (!diag) {
          auto opened = NetlinkSocket::open(NETLINK_SOCK_DIAG, std::chrono::seconds(5));
          if (!opened) return void(out = opened.error());
          diag.emplace(std::move(*opened));
        }
        auto n = abort_tcp_sockets(*diag, family);
        if (!n) return void(out = n.error().context("in " + path));
        aborted += *n;
      }
    }
    out = aborted;
  });
  worker.join();
  return out;
}

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
  // Each one the lab had, by PID and start time: gone from the namespaces is not yet gone from
  // the machine (a daemon's zombie waits for PID 1 to reap it: a BGP lab's 20 bgpd outlived
  // `down` by a second), and whoever checks for leftovers after `down` must find none.
  std::map<int, uint64_t> seen;
  for (int sig : {SIGTERM, SIGKILL}) {
    for (int pid : pids) {
      seen.emplace(pid, start_time(pid));
      ::kill(pid, sig);
    }
    auto deadline = steady_clock::now() + (sig == SIGTERM ? seconds(2) : seconds(5));
    while (steady_clock::now() < deadline) {
      pids = processes_in_namespaces(ns_paths);
      if (pids.empty()) {
        // A parent that never reaps keeps its zombies: not ours to wait for beyond this.
        wait_reaped(seen, seconds(3));
        return ok();
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
  return make_error(std::to_string(pids.size()) + " processes inside the lab survived SIGKILL",
                    EBUSY);
}

}  // namespace fabemu
