// What every command shares to show the session's results: errors as exit codes, JSON, progress.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "cli/commands.h"

namespace fabemu::cli {

void print_error(const std::string& message) {
  std::fprintf(stderr, "fabemu: %s\n", message.c_str());
}

int exit_code(session::Failure f) {
  switch (f) {
    case session::Failure::BadInput:
      return kExitBadInput;
    case session::Failure::NoLab:
      return kExitNoLab;
    case session::Failure::NeedsRoot:
      return kExitNeedsRoot;
    case session::Failure::Unsupported:
      return kExitUnsupported;
    case session::Failure::Interrupted:
      return session::interrupted_exit_code(session::InterruptGuard::signal().load());
    case session::Failure::Failed:
      break;
  }
  return kExitFailed;
}

int report_error(const Error& e) {
  print_error(e.what());
  return exit_code(session::failure_of(e));
}

void print_json(const Json& j) {
  std::printf("%s\n", json_text(j).c_str());  // bytes that are not UTF-8 become U+FFFD
}

StdoutToStderr::StdoutToStderr() {
  std::fflush(stdout);
  // Close-on-exec: no child (a daemon the run starts) keeps the real stdout open.
  saved_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
  if (saved_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
}

void StdoutToStderr::restore() {
  if (saved_ < 0) return;
  std::fflush(stdout);
  ::dup2(saved_, STDOUT_FILENO);
  ::close(saved_);
  saved_ = -1;
}

TerminalObserver::TerminalObserver(bool quiet)
    : quiet_(quiet), tty_(!quiet && ::isatty(STDERR_FILENO)) {}

void TerminalObserver::progress(std::string_view phase, size_t done, size_t total) {
  if (!tty_) return;
  if (phase == "done") {
    std::fprintf(stderr, "\r\033[K");
    return;
  }
  std::fprintf(stderr, "\r\033[K  %.*s %zu/%zu actions", static_cast<int>(phase.size()),
               phase.data(), done, total);
}

void TerminalObserver::remark(const std::string& line) {
  if (!quiet_) std::fprintf(stderr, "  %s\n", line.c_str());
}

void TerminalObserver::step_done(const LabModel& m, const StepReport& s, const std::string& table) {
  if (!table.empty()) std::printf("%s", table.c_str());
  print_step(m, s);
  std::fflush(stdout);
}

}  // namespace fabemu::cli
