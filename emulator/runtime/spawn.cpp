// Entering nodes (like `ip netns exec`, plus UTS, /tmp and cgroup) and running commands there.
#include "runtime/spawn.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "apply/cgroup.h"
#include "runtime/private_tmp.h"
#include "util/files.h"
#include "util/netns.h"
#include "util/process.h"

namespace fabemu {
namespace {

std::string current_dir() {
  char cwd[4096];
  return ::getcwd(cwd, sizeof cwd) ? cwd : "";
}

volatile sig_atomic_t g_signal = 0;
void remember_signal(int sig) {
  g_signal = sig;
}

}  // namespace

Result<void> enter_node(const NodeContext& c) {
  auto net = open_namespace(c.netns_path);
  if (!net) return net.error().context("lab " + c.lab + " node " + c.node + " is not up");
  UniqueFd uts;
  if (!c.uts_path.empty()) {
    auto u = open_namespace(c.uts_path);
    if (!u) return u.error();
    uts = std::move(*u);
  }
  // The cgroup file system is under /sys, which is replaced below.
  if (!c.cgroup.empty()) FABEMU_TRY(join_cgroup(detect_cgroups(), c.cgroup, ::getpid()));
  FABEMU_TRY(enter_namespace(net->get(), CLONE_NEWNET, c.netns_path));
  if (uts.valid()) FABEMU_TRY(enter_namespace(uts.get(), CLONE_NEWUTS, c.uts_path));

  FABEMU_TRY(enter_private_mounts());
  // A sysfs mounted from inside the namespace lists the node's own interfaces.
  ::umount2("/sys", MNT_DETACH);
  if (::mount(c.node.c_str(), "/sys", "sysfs", 0, nullptr) != 0)
    return errno_error("mounting /sys for " + c.node);
  if (DIR* d = ::opendir(c.etc_dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string target = std::string("/etc/") + e->d_name;
      if (path_exists(target)) FABEMU_TRY(bind_mount(c.etc_dir + "/" + e->d_name, target));
    }
    ::closedir(d);
  }
  for (const auto& [from, to] : c.binds) FABEMU_TRY(bind_mount(from, to));
  if (!c.tmp_dir.empty()) {
    // A working directory under /tmp (a build tree, a scenario's folder) would vanish behind
    // the host's own /tmp; it stays where it was, bound at the same path inside.
    char cwd[4096];
    const bool under_tmp = ::getcwd(cwd, sizeof cwd) && std::strncmp(cwd, "/tmp/", 5) == 0;
    UniqueFd here(under_tmp ? ::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1);
    FABEMU_TRY(bind_mount(c.tmp_dir, "/tmp"));
    if (here.valid()) {
      FABEMU_TRY(make_dirs(cwd));
      FABEMU_TRY(bind_mount("/proc/self/fd/" + std::to_string(here.get()), cwd));
      if (::chdir(cwd) != 0) return errno_error(std::string("entering ") + cwd);
    }
  }
  return ok();
}

Error exec_in_node(const NodeContext& c, const std::vector<std::string>& argv) {
  if (argv.empty()) return make_error("no command given", EINVAL);
  if (auto r = check_private_tmp(c, argv, current_dir()); !r) return r.error();
  if (auto r = enter_node(c); !r) return r.error();
  for (const auto& [k, v] : c.env) ::setenv(k.c_str(), v.c_str(), 1);
  return exec_program(argv).context("in " + c.node);
}

ProcessSpec node_process(const NodeContext& c, std::vector<std::string> argv) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = c.env;
  spec.before_exec = [c] { return enter_node(c); };
  return spec;
}

Result<std::vector<NodeExit>> run_in_nodes(const std::vector<NodeContext>& nodes,
                                           const std::vector<std::string>& argv,
                                           const RunOptions& options) {
  using Clock = std::chrono::steady_clock;
  if (argv.empty()) return make_error("no command given", EINVAL);
  const bool bounded = options.timeout.count() > 0;
  const auto deadline = bounded ? Clock::now() + options.timeout : Clock::time_point::max();
  size_t width = 0;
  const std::string cwd = options.cwd.empty() ? current_dir() : options.cwd;
  for (const auto& n : nodes) {
    width = std::max(width, n.node.size());
    FABEMU_TRY(check_private_tmp(n, argv, cwd));
  }

  struct Child {
    Process process;
    std::string partial;
    std::string tag;
    std::string kept;
  };
  std::vector<Child> children;
  for (const auto& n : nodes) {
    ProcessSpec spec = node_process(n, argv);
    // Not the terminal: a process group in the background that reads it is stopped (SIGTTIN),
    // and mpirun reads its stdin to forward it to rank 0.
    spec.stdin_null = true;
    spec.out = Stdio::Pipe;
    spec.err = Stdio::Out;
    spec.own_group = true;  // the whole tree (mpirun's daemons too) goes at the deadline
    spec.cwd = options.cwd;
    auto p = Process::start(spec);
    if (!p) return p.error().context("starting the command in " + n.node);
    std::string t =
        options.tag ? "[" + n.node + std::string(width - n.node.size(), ' ') + "] " : "";
    children.push_back(Child{std::move(*p), "", t, ""});
  }

  struct sigaction sa {
  }, old_int{}, old_term{};
  sa.sa_handler = remember_signal;
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  int forwarded = 0;
  bool timed_out = false;
  auto killed_at = Clock::time_point::max();

  auto emit = [&options](Child& c, const std::string& text) {
    if (options.echo) (void)!::write(STDOUT_FILENO, text.data(), text.size());
    if (options.keep) c.kept += text;
  };
  size_t open = children.size();
  std::vector<pollfd> pfds;
  while (open > 0) {
    if (g_signal && g_signal != forwarded) {
      forwarded = g_signal;
      for (auto& c : children) c.process.signal(forwarded);
    }
    const auto now = Clock::now();
    if (bounded && !timed_out && now >= deadline) {
      timed_out = true;
      killed_at = now + std::chrono::seconds(3);
      for (auto& c : children) c.process.signal(SIGTERM);
    }
    if (timed_out && now >= killed_at) {
      for (auto& c : children) c.process.signal(SIGKILL);
      killed_at = Clock::time_point::max();
    }
    const auto next = timed_out ? killed_at : deadline;
    const int wait_ms =
        next == Clock::time_point::max()
            ? -1
            : static_cast<int>(std::max<int64_t>(
                  0,
                  std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1));
    pfds.clear();
    for (auto& c : children)
      if (c.process.out().valid()) pfds.push_back({c.process.out().get(), POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), wait_ms) < 0) {
      if (errno == EINTR) continue;
      return errno_error("waiting for output");
    }
    for (auto& c : children) {
      UniqueFd& out = c.process.out();
      if (!out.valid()) continue;
      auto ready = std::find_if(pfds.begin(), pfds.end(),
                                [&](const pollfd& p) { return p.fd == out.get(); });
      if (ready == pfds.end() || ready->revents == 0) continue;
      char buf[8192];
      ssize_t r = ::read(out.get(), buf, sizeof buf);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) {
        if (!c.partial.empty()) emit(c, c.tag + c.partial + "\n");
        c.partial.clear();
        out.reset();
        --open;
        continue;
      }
      c.partial.append(buf, static_cast<size_t>(r));
      size_t nl;
      std::string text;
      while ((nl = c.partial.find('\n')) != std::string::npos) {
        text += c.tag + c.partial.substr(0, nl + 1);
        c.partial.erase(0, nl + 1);
      }
      if (!text.empty()) emit(c, text);
    }
  }

  std::vector<NodeExit> exits;
  for (size_t i = 0; i < children.size(); ++i)
    exits.push_back(
        {nodes[i].node, children[i].process.wait(), timed_out, std::move(children[i].kept)});
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  return exits;
}

}  // namespace fabemu
