// The CLI's commands: each returns the process exit code and is the only place that prints.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apply/lab.h"
#include "plan/lab_paths.h"
#include "report/report.h"
#include "runtime/reachability.h"
#include "runtime/workload.h"
#include "session/session.h"
#include "util/json.h"
#include "util/result.h"
#include "util/units.h"

namespace CLI {
class App;
}

namespace fabemu::cli {

// Exit codes (documented in README.md and `fabemu --help`): session.h's.
using session::kExitBadInput;
using session::kExitFailed;
using session::kExitNeedsRoot;
using session::kExitNoLab;
using session::kExitOk;
using session::kExitUnsupported;

// `up` and `run`: the session's request and how the terminal shows it.
struct UpArgs : session::UpRequest {
  bool dry_run = false;
  bool quiet = false;
  bool json = false;     // the result as one JSON object (docs/json.md)
  bool timings = false;  // print where the time went, per phase
  int machines = 0;      // with dry_run: show the partition over this many machines
};

// A failure's exit code; an error printed and its exit code.
int exit_code(session::Failure f);
int report_error(const Error& e);
void print_json(const Json& j);

// While one lives, what is written to stdout (this process's and its children's) goes to stderr:
// a command whose --json is its only stdout still shows its progress. restore() ends it early.
class StdoutToStderr {
 public:
  StdoutToStderr();
  ~StdoutToStderr() { restore(); }
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;
  void restore();

 private:
  int saved_ = -1;
};

// Progress on a terminal's stderr (none when quiet or not a terminal); remarks unless quiet.
class TerminalObserver : public session::Observer {
 public:
  explicit TerminalObserver(bool quiet);
  void progress(std::string_view phase, size_t done, size_t total) override;
  void remark(const std::string& line) override;
  // The step's table (incast flows) and verdict on stdout, flushed before the next step's
  // programs write there.
  void step_done(const LabModel& m, const StepReport& s, const std::string& table) override;

 private:
  bool quiet_, tty_;
};

// `link set LAB LINK --rate ...`; `link down/up` set `down`.
struct LinkSetArgs {
  std::string lab, link;
  std::string rate, delay, jitter, loss, loss_burst, queue, ecn, ecn_red, pfc, corrupt,
      duplicate;  // "" = unchanged
  std::optional<bool> reorder, down;
  // With `down`: the switches' routes move off the link (and back at `up`), as the fault
  // timeline's `down` does unless it says `reroute: false`.
  bool reroute = true;
  bool accept_degraded = false;
  bool json = false;
  std::string on;  // --on slurm: a lab across machines
  // The shape settings given, by their link-shape key (`ecn_threshold` is --ecn-threshold,
  // `ecn` --ecn-red: --ecn was the threshold's first name):
  // what `link set` parses and what `--on slurm` hands on to every machine.
  std::vector<std::pair<std::string_view, const std::string*>> shape_options() const {
    return {{"rate", &rate},         {"delay", &delay},           {"jitter", &jitter},
            {"loss", &loss},         {"loss_burst", &loss_burst}, {"queue", &queue},
            {"ecn_threshold", &ecn}, {"ecn", &ecn_red},           {"pfc", &pfc},
            {"corrupt", &corrupt},   {"duplicate", &duplicate}};
  }
};

// `perf LAB SERVER CLIENT --tool ib_write_bw -- EXTRA...`
struct PerfArgs : PerfRequest {
  std::string lab;
  bool json = false;
};
int cmd_up(const UpArgs& args, const LabPaths& base);
int cmd_perf(const PerfArgs& args, const LabPaths& base);
int cmd_link_set(const LinkSetArgs& args, const LabPaths& base);
// Which rows `status` shows: nodes and links by name or glob (a link's node, or a link "a:b"
// either way round); none given: every row of a small lab, a summary by tier of a big one
// unless `all`.
using session::StatusView;
int cmd_status(const std::string& lab, bool json, const StatusView& view, const std::string& on,
               const LabPaths& base);
int cmd_exec(const session::ExecRequest& req, const LabPaths& base);
int cmd_doctor(bool json, bool calibrate, const std::string& run_root);
// `host crash|restart|freeze|thaw LAB HOST`
int cmd_host(const session::HostRequest& req, bool json, const LabPaths& base);
struct RunArgs {
  bool keep = false;       // leave the lab up
  std::string report_dir;  // default: fabemu-reports/LAB-DATE-TIME
  bool json = false;       // the result as one object on stdout; the run's text on stderr
  // The same run on each of these scenarios after the first, and the replay's iteration time
  // compared with the first's.
  std::vector<std::string> compare;
  std::string junit;  // also write the run as a JUnit XML report here
};
int cmd_run(const UpArgs& args, const RunArgs& run, const LabPaths& base);

// `run --vm`, `doctor --vm` (vm_command.cpp): `fabemu ARGS` inside the VM lane's kernel
// (scripts/vm-run: Debian's newest under qemu, KVM where the host has it), its exit status
// passed back. `report_dir` (run): the report's directory on this machine; the guest writes it
// to vm-run's shared out directory and it is moved here afterwards.
int cmd_in_vm(std::vector<std::string> args, const std::string& report_dir);

// A status object (session::status_json, or merged) rendered as text.
void print_status_json(const Json& status);
// A status object (one machine's or merged) as `status` prints it: filtered by `view`, with
// "summary" (by tier and link class) added; as JSON or as text.
void show_status(Json status, bool json, const StatusView& view);
int cmd_graph(const std::string& target, const std::string& output, const std::string& format,
              const LabPaths& base);
int cmd_predict(const std::string& lab, const std::string& transport, bool json,
                const LabPaths& base);
// mpirun's remote shell: runs the words, joined, by /bin/sh inside the host, as sshd would.
int cmd_rsh(const std::vector<std::string>& args);

// Rendering shared by `up`, `down` and `run`: the lab as built (or its JSON), the labs taken
// down (the exit code), a step's verdict, the reachability check's line.
void render_up(const session::UpOutcome& up, const UpArgs& args);
int render_down(const session::DownOutcome& out, bool json);
void print_step(const LabModel& m, const StepReport& s);
void print_reachability(const LabModel& m, const ReachabilityReport& reach, double seconds);
void print_error(const std::string& message);

// ---- the command line ----------------------------------------------------------------------

// What every command's registration shares: the global options, the whole command line (for
// --vm), and the exit code of the command that ran (main returns it).
struct CommandLine {
  LabPaths base;
  std::vector<std::string> argv;  // argv[1..]
  int exit = 2;                   // kExitBadInput until a command has run
  // The command line without `word` (--vm: the same command inside the VM).
  std::vector<std::string> without(const std::string& word) const;
};

inline constexpr const char* kOnHelp =
    "slurm: the lab was spread over the machines of a Slurm allocation";
inline constexpr const char* kVmHelp =
    "Run it in the VM lane's kernel instead (scripts/vm-run: Debian's newest, with rxe, fq, "
    "netem, BPF qdiscs and the OVS module; KVM where this machine has it, else software "
    "emulation)";

// Each command's registration, in the command's file: its subcommand, options and a callback
// that runs it and sets `cl.exit`.
void add_up_command(CLI::App& app, CommandLine& cl);
void add_down_command(CLI::App& app, CommandLine& cl);
void add_status_command(CLI::App& app, CommandLine& cl);
void add_exec_command(CLI::App& app, CommandLine& cl);
void add_host_command(CLI::App& app, CommandLine& cl);
void add_doctor_command(CLI::App& app, CommandLine& cl);
void add_rsh_help(CLI::App& app);  // rsh itself is parsed before CLI11 (cmd_rsh)
void add_link_command(CLI::App& app, CommandLine& cl);
void add_perf_command(CLI::App& app, CommandLine& cl);
void add_predict_command(CLI::App& app, CommandLine& cl);
void add_run_command(CLI::App& app, CommandLine& cl);
void add_agent_command(CLI::App& app, CommandLine& cl);
void add_graph_command(CLI::App& app, CommandLine& cl);
void add_capture_command(CLI::App& app, CommandLine& cl);
void add_metrics_command(CLI::App& app, CommandLine& cl);
void add_top_command(CLI::App& app, CommandLine& cl);
// What `up` and `run` share: the scenario and how the lab is built from it.
void add_build_options(CLI::App* cmd, UpArgs& args);

}  // namespace fabemu::cli
