// The CLI's commands: each returns the process exit code and is the only place that prints.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "apply/lab.h"
#include "plan/lab_paths.h"
#include "util/result.h"

namespace fabemu::cli {

// Exit codes (documented in README.md and `fabemu --help`).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;     // the system refused or a check failed
inline constexpr int kExitBadInput = 2;   // bad command line or scenario file
inline constexpr int kExitNoLab = 3;      // the named lab does not exist
inline constexpr int kExitNeedsRoot = 4;  // must run as root

struct UpArgs {
  std::string scenario;
  std::string lab;  // default: the scenario's name
  bool dry_run = false;
  bool quiet = false;
  bool timings = false;  // print where the time went, per phase
  // Without fq the link model polices (rate, loss, ECN) but adds no delay or jitter; a
  // scenario that asks for them is refused unless the user accepts that.
  bool accept_degraded = false;
  std::string time_scale;  // --time-scale N|auto: over the scenario's time_scale
  int machines = 0;        // with dry_run: show the partition over this many machines
};

// `link set LAB LINK --rate ...`; `link down/up` set `down`.
struct LinkSetArgs {
  std::string lab, link;
  std::string rate, delay, jitter, loss, loss_burst, queue, ecn;  // "" = unchanged
  std::optional<bool> reorder, down;
  bool accept_degraded = false;
};

// `perf LAB SERVER CLIENT --tool ib_write_bw -- EXTRA...`
struct PerfArgs {
  std::string lab, server, client;
  std::string tool = "ib_write_bw";  // ib_{write,read,send}_bw, ib_{write,send}_lat, ucx_perftest
  int timeout_s = 60;
  std::vector<std::string> extra;  // passed on to the tool
};

int cmd_up(const UpArgs& args, const LabPaths& base);
int cmd_perf(const PerfArgs& args, const LabPaths& base);
int cmd_link_set(const LinkSetArgs& args, const LabPaths& base);
int cmd_down(const std::vector<std::string>& labs, bool all, const LabPaths& base);
int cmd_status(const std::string& lab, bool json, const LabPaths& base);
int cmd_exec(const std::string& target, bool all, bool no_tag, const std::vector<std::string>& argv,
             const LabPaths& base);
int cmd_doctor(bool json, bool calibrate, const std::string& run_root);
struct RunArgs {
  bool keep = false;       // leave the lab up
  std::string report_dir;  // default: fabemu-reports/LAB-DATE-TIME
};
int cmd_run(const UpArgs& args, const RunArgs& run, const LabPaths& base);
int cmd_graph(const std::string& target, const std::string& output, const std::string& format,
              const LabPaths& base);
int cmd_predict(const std::string& lab, const std::string& transport, const LabPaths& base);
// mpirun's remote shell: runs the words, joined, by /bin/sh inside the host, as sshd would.
int cmd_rsh(const std::vector<std::string>& args);

// Shared helpers.
double seconds_since(std::chrono::steady_clock::time_point t);
// `up`'s work, shared with `run`: checks, the lab built, what `up` prints; the exit code.
int bring_up(const UpArgs& args, const LabPaths& base, std::optional<UpResult>& out,
             LabPaths& paths);
void print_error(const std::string& message);
// A lab's model could not be read: says why; returns kExitNoLab when there is no such lab.
int lab_error(const Error& e);
bool require_root(const char* command);

}  // namespace fabemu::cli
