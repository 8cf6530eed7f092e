// fork/exec, pipes, pidfds and waitpid: the only place fabemu starts or reaps a process.
#include "util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace fabemu {
namespace {

using namespace std::chrono_literals;

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434  // Linux 5.3; the same number on every architecture
#endif

bool is_executable(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

int millis_until(ProcessClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - ProcessClock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, 60'000));
}

// Our environment with `env` set over it, as execve takes it.
std::vector<std::string> merged_environment(
    const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    const std::string_view key(*e, eq ? static_cast<size_t>(eq - *e) : std::strlen(*e));
    const bool replaced =
        std::any_of(env.begin(), env.end(), [&](const auto& kv) { return kv.first == key; });
    if (!replaced) out.emplace_back(*e);
  }
  for (const auto& [key, value] : env) out.push_back(key + "=" + value);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// What a child that cannot get to exec tells its parent, on a pipe whose write end closes on
// exec (the parent reading end of file: exec happened): the errno, then the message (without the
// errno's words, which the Error adds). It exits 127, a shell's "not run".
[[noreturn]] void child_fail(int report_fd, const std::string& what, int err) {
  char buf[512];
  const size_t n = std::min(what.size(), sizeof buf - sizeof err);
  std::memcpy(buf, &err, sizeof err);
  std::memcpy(buf + sizeof err, what.data(), n);
  (void)!::write(report_fd, buf, sizeof err + n);
  ::_exit(127);
}

// The parent's side: nothing (the child exec'd) or the child's error.
std::optional<Error> read_child_failure(int report_fd) {
  char buf[512];
  ssize_t n;
  do {
    n = ::read(report_fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  int err = 0;
  if (n < static_cast<ssize_t>(sizeof err)) return std::nullopt;
  std::memcpy(&err, buf, sizeof err);
  return make_error(std::string(buf + sizeof err, static_cast<size_t>(n) - sizeof err), err);
}

// A pipe whose ends close on exec; `fds[1]` goes to the child.
Result<std::pair<UniqueFd, UniqueFd>> make_pipe(const std::string& program) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno_error("creating a pipe for " + program);
  return std::pair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::string last_lines(const std::string& text, size_t lines) {
  size_t end = text.find_last_not_of(" \n");
  if (end == std::string::npos) return "";
  size_t start = end + 1;
  for (size_t n = 0; n < lines && start > 0; ++n) {
    size_t nl = text.rfind('\n', start - 1);
    start = nl == std::string::npos ? 0 : nl;
    if (start == 0) break;
  }
  std::string out = text.substr(start, end + 1 - start);
  while (!out.empty() && out.front() == '\n') out.erase(0, 1);
  return out;
}

}  // namespace

std::string self_exe() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? std::string(self, static_cast<size_t>(n)) : "fabemu";
}

Result<std::string> find_program(std::string_view name) {
  if (name.empty()) return make_error("empty program name", EINVAL);
  if (name.find('/') != std::string_view::npos) return std::string(name);
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      if (colon != 0) dirs.emplace_back(rest.substr(0, colon));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  // Debian puts daemons and admin tools in /usr/sbin, which sudo's and users' PATHs often lack.
  for (const char* d :
       {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"})
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.emplace_back(d);
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/" + std::string(name);
    if (is_executable(candidate)) return candidate;
  }
  return make_error(std::string(name) + ": program not found on PATH or in the sbin directories",
                    ENOENT);
}

int exit_status(int ws) {
  if (WIFEXITED(ws)) return WEXITSTATUS(ws);
  if (WIFSIGNALED(ws)) return 128 + WTERMSIG(ws);
  return 1;
}

Result<Process> Process::start(const ProcessSpec& spec) {
  if (spec.argv.empty()) return make_error("no command given", EINVAL);
  const std::string& program = spec.argv[0];
  // Not found: the child's exec fails with ENOENT, which start() returns.
  auto found = find_program(program);
  std::string path = found ? *found : program;
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = merged_environment(spec.env);
  std::vector<char*> argv = c_strings(argv_strings), envp = c_strings(env_strings);

  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null.valid()) return errno_error("opening /dev/null");
  Process p;
  UniqueFd out_w, err_w;
  if (spec.out == Stdio::Pipe) {
    auto pipe = make_pipe(program);
    if (!pipe) return pipe.error();
    p.out_ = std::move(pipe->first);
    out_w = std::move(pipe->second);
  }
  if (spec.err == Stdio::Pipe) {
    auto pipe = make_pipe(program);
    if (!pipe) return pipe.error();
    p.err_ = std::move(pipe->first);
    err_w = std::move(pipe->second);
  }
  auto target = [&](Stdio how, int given, const UniqueFd& pipe) {
    switch (how) {
      case Stdio::Inherit:
      case Stdio::Out:
        return -1;
      case Stdio::Null:
        return null.get();
      case Stdio::Pipe:
        return pipe.get();
      case Stdio::Fd:
        return given;
    }
    return -1;
  };
  const int out_fd = target(spec.out, spec.out_fd, out_w);
  const int err_fd = spec.err == Stdio::Out ? (out_fd >= 0 ? out_fd : STDOUT_FILENO)
                                            : target(spec.err, spec.err_fd, err_w);

  auto report = make_pipe(program);
  if (!report) return report.error();
  const int report_fd = report->second.get();
  const pid_t pid = ::fork();
  if (pid < 0) return errno_error("starting " + program);
  if (pid == 0) {
    if (spec.own_group) ::setpgid(0, 0);
    if (spec.stdin_null) ::dup2(null.get(), STDIN_FILENO);
    if (out_fd >= 0) ::dup2(out_fd, STDOUT_FILENO);
    if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
    if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) {
      const int err = errno;
      child_fail(report_fd, "cannot enter " + spec.cwd, err);
    }
    if (spec.before_exec)
      if (auto r = spec.before_exec(); !r)
        child_fail(report_fd, r.error().message,
                   r.error().code.value() ? r.error().code.value() : EIO);
    ::execve(path.c_str(), argv.data(), envp.data());
    const int err = errno;
    child_fail(report_fd, "running " + program, err);
  }
  // Also here, so that a signal to the group right away finds it.
  if (spec.own_group) ::setpgid(pid, pid);
  p.pid_ = pid;
  p.group_ = spec.own_group;
  p.pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  report->second.reset();  // ours: end of file once the child has exec'd
  if (auto failed = read_child_failure(report->first.get())) {
    p.wait();
    return *failed;
  }
  return p;
}

Process::Process(Process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      group_(o.group_),
      status_(o.status_),
      pidfd_(std::move(o.pidfd_)),
      out_(std::move(o.out_)),
      err_(std::move(o.err_)) {}

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0 && !status_) {
      signal(SIGKILL);
      wait();
    }
    pid_ = std::exchange(o.pid_, -1);
    group_ = o.group_;
    status_ = o.status_;
    pidfd_ = std::move(o.pidfd_);
    out_ = std::move(o.out_);
    err_ = std::move(o.err_);
  }
  return *this;
}

Process::~Process() {
  if (pid_ > 0 && !status_) {
    signal(SIGKILL);
    wait();
  }
}

void Process::reap(int ws) {
  status_ = exit_status(ws);
  pidfd_.reset();
}

std::optional<int> Process::poll() {
  if (status_ || pid_ <= 0) return status_;
  int ws = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &ws, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) reap(ws);
  if (r < 0) status_ = -1;  // not our child any more (reaped elsewhere): nothing to wait for
  return status_;
}

std::optional<int> Process::wait_until(ProcessClock::time_point deadline) {
  for (;;) {
    if (auto s = poll()) return s;
    if (ProcessClock::now() >= deadline) return std::nullopt;
    if (pidfd_.valid()) {
      pollfd p{pidfd_.get(), POLLIN, 0};
      ::poll(&p, 1, millis_until(deadline));
    } else {
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
          5ms, std::max<std::chrono::nanoseconds>(deadline - ProcessClock::now(), 0ns)));
    }
  }
}

int Process::wait() {
  return *wait_until(ProcessClock::time_point::max());
}

void Process::signal(int sig) {
  if (pid_ <= 0) return;
  // A group outlives its leader while members remain (mpirun's daemons), and its id is not
  // reused until they are gone.
  if (group_)
    ::kill(-pid_, sig);
  else if (!status_)
    ::kill(pid_, sig);
}

int Process::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return -1;
  if (!poll()) {
    signal(SIGTERM);
    if (!wait_until(ProcessClock::now() + grace)) signal(SIGKILL);
  }
  if (group_) ::kill(-pid_, SIGKILL);  // whatever the leader left behind
  return wait();
}

Error exec_program(const std::vector<std::string>& argv) {
  if (argv.empty()) return make_error("no command given", EINVAL);
  auto path = find_program(argv[0]);
  if (!path) return path.error();
  std::vector<std::string> strings = argv;
  std::vector<char*> args = c_strings(strings);
  ::execv(path->c_str(), args.data());
  return errno_error("running " + argv[0]);
}

void collect_output(Process& p, ProcessClock::time_point deadline, std::string& out,
                    std::string& err) {
  std::string* sinks[2] = {&out, &err};
  UniqueFd* fds[2] = {&p.out(), &p.err()};
  // A program that ended may have left a child holding its output: read what comes for a
  // moment longer, then stop listening.
  auto linger_until = ProcessClock::time_point::max();
  while (fds[0]->valid() || fds[1]->valid()) {
    auto until = std::min(deadline, linger_until);
    if (ProcessClock::now() >= until) break;
    if (linger_until == ProcessClock::time_point::max() && p.poll())
      linger_until = ProcessClock::now() + 200ms;
    pollfd pfds[2] = {{fds[0]->get(), POLLIN, 0}, {fds[1]->get(), POLLIN, 0}};
    // Until output arrives, or at most 50 ms: the child's end is seen by poll() above.
    if (::poll(pfds, 2, std::min(50, millis_until(until))) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (!fds[i]->valid() || pfds[i].revents == 0) continue;
      char buf[8192];
      const ssize_t n = ::read(fds[i]->get(), buf, sizeof buf);
      if (n > 0)
        sinks[i]->append(buf, static_cast<size_t>(n));
      else if (n == 0 || errno != EINTR)
        fds[i]->reset();
    }
  }
}

Result<CommandOutcome> run_captured(const std::vector<std::string>& argv,
                                    const CommandOptions& options) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.env = options.env;
  spec.out = spec.err = Stdio::Pipe;
  spec.own_group = true;
  spec.before_exec = options.before_exec;
  auto started = Process::start(spec);
  if (!started) return started.error();
  Process& p = *started;
  const auto deadline = ProcessClock::now() + options.timeout;
  CommandOutcome o;
  collect_output(p, deadline, o.out, o.err);
  if (auto s = p.wait_until(deadline)) {
    o.status = *s;
  } else {
    o.timed_out = true;
    p.stop(0ms);
  }
  return o;
}

Result<std::string> run_command(const std::vector<std::string>& argv,
                                const CommandOptions& options) {
  auto o = run_captured(argv, options);
  if (!o) return o.error();
  const std::string what = argv[0] + (argv.size() > 1 ? " " + argv[1] : "");
  if (o->timed_out)
    return make_error(
        what + ": no answer in " + std::to_string(options.timeout.count()) + " ms (killed)",
        ETIMEDOUT);
  if (o->status == 0) return std::move(o->out);
  const std::string status = o->status > 128 ? "killed by signal " + std::to_string(o->status - 128)
                                             : "exit status " + std::to_string(o->status);
  const std::string said = last_lines(o->err.empty() ? o->out : o->err, 3);
  return make_error(what + ": " + status + (said.empty() ? "" : ": " + said), EIO);
}

Result<ServerClientOutcome> run_server_client(const ServerClientSpec& spec) {
  ServerClientOutcome out;
  auto server = Process::start(spec.server);
  if (!server) return server.error();
  while (!(out.ready = spec.ready(server->pid()))) {
    if (auto s = server->poll()) {
      out.server_early_exit = s;
      return out;
    }
    if (ProcessClock::now() >= spec.deadline) {
      server->stop(0ms);
      return out;
    }
    std::this_thread::sleep_for(10ms);
  }
  auto client = Process::start(spec.client);
  if (!client) return client.error();
  out.client = client->wait_until(spec.deadline);
  if (!out.client) {
    out.client_timed_out = true;
    client->stop(0ms);
    server->stop(0ms);
    return out;
  }
  // After a good exchange the server ends by itself; after a bad one it would wait for ever.
  const auto grace = *out.client == 0
                         ? std::min(spec.deadline, ProcessClock::now() + spec.server_grace)
                         : ProcessClock::now();
  out.server = server->wait_until(grace);
  if (!out.server) server->stop(0ms);
  return out;
}

}  // namespace fabemu
