// run_command: posix_spawn with pipes, a poll loop bounded by the deadline, then waitpid.
#include "util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

extern char** environ;

namespace fabemu {
namespace {

using Clock = std::chrono::steady_clock;

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

Result<std::string> run_command(const std::vector<std::string>& argv,
                                const CommandOptions& options) {
  if (argv.empty()) return make_error("run_command: empty argv", EINVAL);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    bool replaced = false;
    for (const auto& [key, _] : options.env)
      replaced |= std::strncmp(*e, key.c_str(), key.size()) == 0 && (*e)[key.size()] == '=';
    if (!replaced) env_strings.emplace_back(*e);
  }
  for (const auto& [key, value] : options.env) env_strings.push_back(key + "=" + value);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return errno_error("pipe for " + argv[0]);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return errno_error("pipe for " + argv[0]);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    return make_error("starting " + argv[0], rc);
  }

  // Until both pipes close (the program and anything it detached have let go of them) or the
  // deadline passes.
  std::string captured[2];
  int fds[2] = {out[0], err[0]};
  const auto deadline = Clock::now() + options.timeout;
  bool timed_out = false;
  while (fds[0] >= 0 || fds[1] >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || p[i].revents == 0) continue;
      char buf[8192];
      const ssize_t n = ::read(fds[i], buf, sizeof buf);
      if (n > 0) {
        captured[i].append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i]);
        fds[i] = -1;
      }
    }
  }
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
  if (timed_out) ::kill(pid, SIGKILL);
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  const std::string what = argv[0] + (argv.size() > 1 ? " " + argv[1] : "");
  if (timed_out)
    return make_error(
        what + ": no answer in " + std::to_string(options.timeout.count()) + " ms (killed)",
        ETIMEDOUT);
  if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) return captured[0];
  std::string status = WIFEXITED(ws) ? "exit status " + std::to_string(WEXITSTATUS(ws))
                                     : "killed by signal " + std::to_string(WTERMSIG(ws));
  std::string said = last_lines(captured[1].empty() ? captured[0] : captured[1], 3);
  return make_error(what + ": " + status + (said.empty() ? "" : ": " + said), EIO);
}

}  // namespace fabemu
