// Kinds of failure and the interrupt flag.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "session/session.h"

namespace fabemu::session {
namespace {

// A category whose codes are Failure values and which has no words of its own: Error::what()
// then shows the message alone.
class FailureCategory : public std::error_category {
 public:
  const char* name() const noexcept override { return "fabemu-session"; }
  std::string message(int) const override { return {}; }
};

const std::error_category& failure_category() {
  static const FailureCategory c;
  return c;
}

std::atomic<int> g_signal{0};
std::atomic<bool> g_guarded{false};
struct sigaction g_old_int {
}, g_old_term{};

extern "C" void on_signal(int sig) {
  g_signal.store(sig);
}

}  // namespace

Failure failure_of(const Error& e) {
  if (e.code.category() == failure_category()) return static_cast<Failure>(e.code.value());
  if (e.code.category() != std::generic_category()) return Failure::Failed;
  switch (e.code.value()) {
    case EOPNOTSUPP:
      return Failure::Unsupported;
    case EINTR:
      return Failure::Interrupted;
    default:
      return Failure::Failed;
  }
}

Failure failure_of_exit(int status) {
  switch (status) {
    case kExitBadInput:
      return Failure::BadInput;
    case kExitNoLab:
      return Failure::NoLab;
    case kExitNeedsRoot:
      return Failure::NeedsRoot;
    case kExitUnsupported:
      return Failure::Unsupported;
    default:
      return Failure::Failed;
  }
}

Error with_failure(Error e, Failure kind) {
  e.message = e.what();
  e.code = std::error_code(static_cast<int>(kind), failure_category());
  return e;
}

Result<void> need_root(const char* command) {
  if (::geteuid() == 0) return {};
  return with_failure(
      make_error(std::string(command) +
                 " needs root (namespaces, veths and routes are kernel objects): run it with sudo"),
      Failure::NeedsRoot);
}

Error absent_is_no_lab(Error e) {
  return errno_of(e) == ENOENT ? with_failure(std::move(e), Failure::NoLab) : e;
}

Result<LabModel> open_lab(const LabPaths& paths, JournalFile* journal) {
  auto model = lab_model(paths, journal);
  if (!model) return absent_is_no_lab(model.error());
  return model;
}

InterruptGuard::InterruptGuard() {
  if (g_guarded.exchange(true)) throw std::logic_error("one InterruptGuard per process");
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptGuard::~InterruptGuard() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  g_guarded.store(false);
}

const std::atomic<int>& InterruptGuard::signal() {
  return g_signal;
}

int interrupted_exit_code(int sig) {
  return 128 + (sig ? sig : SIGINT);
}

}  // namespace fabemu::session
