// Child processes, in one place: finding a program, starting it (an argv vector, never a shell
// string; extra environment; stdio wiring; a process group of its own; a hook that runs in the
// child before exec, such as entering an emulated node), watching it against a deadline that
// holds to the end, stopping it (SIGTERM, a grace period, SIGKILL) and reaping it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"
#include "util/unique_fd.h"

namespace fabemu {

using ProcessClock = std::chrono::steady_clock;

// The one PATH look-up: `name` itself when it holds a '/', else the first executable file of
// that name in $PATH, then in the sbin directories a user's (or sudo's) PATH often lacks.
// ENOENT naming the program when there is none.
Result<std::string> find_program(std::string_view name);

// This process's own binary (/proc/self/exe), or "fabemu" when it cannot be read.
std::string self_exe();

// An exit status as shells report it: the exit code, or 128 + the signal that ended it.
int exit_status(int wait_status);

// Where a child's standard output or error goes.
enum class Stdio {
  Inherit,  // ours
  Null,     // /dev/null
  Pipe,     // a pipe whose read end the Process holds
  Fd,       // the descriptor given (ProcessSpec::out_fd / err_fd)
  Out,      // (standard error only) wherever standard output goes
};

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up by find_program
  // Set in the child, replacing ours of the same name.
  std::vector<std::pair<std::string, std::string>> env;
  Stdio out = Stdio::Inherit, err = Stdio::Inherit;
  int out_fd = -1, err_fd = -1;
  bool stdin_null = true;  // else the child reads our standard input
  // A process group of its own, so that signals reach everything it starts (mpirun's daemons):
  // signal() and stop() then go to the group. Else it stays in ours (a Ctrl-C reaches it too).
  bool own_group = false;
  std::string cwd;  // where it starts; empty: here
  // Runs in the child after fork, before exec: entering a node's namespaces, say. Its error is
  // start()'s.
  std::function<Result<void>()> before_exec;
};

// A started child. Move-only; a child still running when its Process goes is killed (SIGKILL,
// its group with own_group) and reaped, so no caller leaks one.
class Process {
 public:
  // Returns once the child has exec'd. A child that could not (no such program: ENOENT, not
  // executable: EACCES, before_exec's error, a cwd it cannot enter) is reaped, and its error
  // (errno and message) is start()'s: never mistaken for a program's own exit 127.
  static Result<Process> start(const ProcessSpec& spec);

  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  // The read ends of Stdio::Pipe outputs (invalid otherwise); taking one hands it over.
  UniqueFd& out() { return out_; }
  UniqueFd& err() { return err_; }

  // The exit status once it has ended (reaped then), else nullopt; never blocks.
  std::optional<int> poll();
  // Blocks until it ends or the deadline passes: its exit status, or nullopt while it runs.
  std::optional<int> wait_until(ProcessClock::time_point deadline);
  int wait();
  // The signal to the process, or its group with own_group; nothing once it has been reaped.
  void signal(int sig);
  // SIGTERM, up to `grace` to end, then SIGKILL; reaps; the exit status.
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(3));
  // Forgets the child without touching it (a daemon that must outlive us; init reaps it).
  void release() { pid_ = -1; }

 private:
  Process() = default;
  void reap(int wait_status);

  pid_t pid_ = -1;
  bool group_ = false;
  std::optional<int> status_;
  UniqueFd pidfd_;  // where the kernel has pidfd_open: exit without polling
  UniqueFd out_, err_;
};

// Replaces this process with argv (looked up by find_program). Returns only on failure.
Error exec_program(const std::vector<std::string>& argv);

// A program run to completion with its output captured.
struct CommandOptions {
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) ours
  // From start to reaped: then its group is killed. Holds even when a program detaches a child
  // that keeps the output open, or closes its output and goes on running.
  std::chrono::milliseconds timeout{30000};
  std::function<Result<void>()> before_exec;  // see ProcessSpec
};

struct CommandOutcome {
  int status = -1;  // exit status (128 + signal); -1 when it was killed at the deadline
  bool timed_out = false;
  std::string out, err;
};

// Reads a child's Stdio::Pipe outputs into `out` and `err` until both close, or it has ended
// (a moment is left for a child it left behind to finish writing), or the deadline.
void collect_output(Process& p, ProcessClock::time_point deadline, std::string& out,
                    std::string& err);

// Runs argv (stdin from /dev/null, in a process group of its own) and collects both outputs
// until it ends or the deadline. Error only when it cannot be started.
Result<CommandOutcome> run_captured(const std::vector<std::string>& argv,
                                    const CommandOptions& options = {});

// The same, for callers that only want success: its standard output when it exits 0; otherwise
// an error naming the program, its exit status and the last lines of what it said.
Result<std::string> run_command(const std::vector<std::string>& argv,
                                const CommandOptions& options = {});

// "Start a server, wait until it is ready, run the client against it, reap both": perftest,
// ucx_perftest, ibv_rc_pingpong.
struct ServerClientSpec {
  ProcessSpec server, client;
  std::function<bool(pid_t server)> ready;  // polled every 10 ms, e.g. listening_in(...)
  ProcessClock::time_point deadline;        // for all of it
  // After the client succeeded, how long the server may take to end on its own.
  std::chrono::milliseconds server_grace{5000};
};

struct ServerClientOutcome {
  bool ready = false;                    // the server became ready in time
  std::optional<int> server_early_exit;  // it ended before it was ready: its status
  std::optional<int> client;             // the client's status; unset: never ran, or timed out
  bool client_timed_out = false;
  std::optional<int> server;  // the server's status; unset: stopped by us
};

// Error only when a process could not be started.
Result<ServerClientOutcome> run_server_client(const ServerClientSpec& spec);

}  // namespace fabemu
