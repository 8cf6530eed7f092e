// The session: what fabemu does for a front end (the CLI, the Python package through it), as
// calls that return typed results. It never prints: progress and remarks go to an Observer,
// results carry to_json() (the `--json` of each command, docs/json.md) and the CLI renders them
// as text. Failures are Results whose errno says their kind (session_failure()).
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apply/lab.h"
#include "apply/link_control.h"
#include "plan/lab_paths.h"
#include "report/report.h"
#include "runtime/lab_status.h"
#include "runtime/workload.h"
#include "scenario/scenario.h"
#include "util/json.h"
#include "util/result.h"

namespace fabemu::session {

// The version of every result's JSON (util/json.h).
inline constexpr int kSchemaVersion = kJsonSchemaVersion;

// What kind of failure an error is, by its errno: what the CLI turns into exit codes.
enum class Failure {
  Failed,       // the system refused, or a check failed
  BadInput,     // EINVAL: a bad argument or scenario file
  NoLab,        // ENOENT: no lab of that name
  NeedsRoot,    // EPERM
  Unsupported,  // EOPNOTSUPP: a fine request this machine cannot do (the message says why)
  Interrupted,  // EINTR: SIGINT or SIGTERM; what was made is gone again
};
Failure failure_of(const Error& e);
// The error with `errno` set to the kind's (keeping the message).
Error with_failure(Error e, Failure kind);

// Fails with NeedsRoot, naming the command, unless this process is root.
Result<void> need_root(const char* command);

// A running lab's model from its journal; NoLab when there is no such lab.
Result<LabModel> open_lab(const LabPaths& paths);

// Progress and remarks while a call works. The default ignores everything.
class Observer {
 public:
  virtual ~Observer() = default;
  // Actions done of total in a phase of `up`; phase "done" at the end.
  virtual void progress(std::string_view /*phase*/, size_t /*done*/, size_t /*total*/) {}
  // A line worth showing as it happens (a probe that runs, a step skipped); not a result.
  virtual void remark(const std::string& /*line*/) {}
  // A workload step ended (run): its report and the table it made (incast flows), if any.
  virtual void step_done(const LabModel& /*model*/, const StepReport& /*step*/,
                         const std::string& /*table*/) {}
};

// SIGINT and SIGTERM set a flag instead of ending the process, while one of these lives; the
// calls that build (up, run) poll it and undo what they made. One per process.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  // The flag the signal handler sets, and the signal (0: none).
  static const std::atomic<int>& signal();
};
// The exit code of a process ended by `sig` as shells report it (SIGINT: 130).
int interrupted_exit_code(int sig);

// ---- up -------------------------------------------------------------------------------------

struct UpRequest {
  std::string scenario;  // the scenario file
  std::string lab;       // default: the scenario's name
  bool netns_names = false;
  bool accept_degraded = false;
  std::string time_scale;  // "N" or "auto"; empty: the scenario's
  // One machine's part of a lab across machines: every machine's name (the allocation's
  // order), the pool they agreed on, the directory they share.
  std::vector<std::string> cluster;
  std::optional<int> pool;
  std::string shared_dir;
};

// What `up` decides before it touches anything: the scenario loaded and checked, the lab's
// model (pool 0; with `cluster`, this machine's part), what the kernel lets the link model do,
// the time scale and its notes.
struct Prepared {
  Scenario scenario;
  std::string text;
  LabPaths paths;
  LabModel model;
  PlanOptions plan;
  std::vector<std::string> notes;
};
// `model_only`: the model and no look at this machine (a dry run's partition).
Result<Prepared> prepare(const UpRequest& req, const LabPaths& base, Observer& observer,
                         bool model_only = false);

struct UpOutcome {
  std::string lab;
  double seconds = 0;
  UpResult up;
  std::vector<std::string> notes;  // what was built and how (time scale, link model, ...)
  Json to_json() const;
};
// Builds the prepared lab. `interrupt` (InterruptGuard::signal()) stops it between actions: what
// was made is taken down and the error's kind is Interrupted.
Result<UpOutcome> up(Prepared prepared, const std::string& scenario_file, Observer& observer,
                     const std::atomic<int>* interrupt = nullptr);
// The notes about what `up` built (time scale, link model, switches, routing, rdma).
std::vector<std::string> up_notes(const Scenario& s, const UpResult& up);

// ---- down -----------------------------------------------------------------------------------

struct DownRequest {
  std::vector<std::string> labs;
  bool all = false;  // every lab on this machine
  bool wait_for_kernel = true;
};
struct DownOutcome {
  struct Lab {
    std::string lab;
    bool taken_down = false;
    bool agent_stopped = false;  // an agent still working on it here was stopped first
    double seconds = 0;
    std::optional<Error> error;
  };
  std::vector<Lab> labs;
  std::optional<double> kernel_seconds;  // until the kernel had freed the namespaces
  std::string kernel_note;               // why it was not waited for, if it was not
  Json to_json() const;
  // Of the labs' errors, the worst kind (NoLab alone only when one lab was named).
  std::optional<Failure> failure() const;
};
Result<DownOutcome> down(const DownRequest& req, const LabPaths& base);

// ---- link set / down / up -------------------------------------------------------------------

struct LinkRequest {
  std::string lab, link;
  // By link-shape key (rate, delay, ..., ecn_threshold): the settings given as text.
  std::vector<std::pair<std::string, std::string>> settings;
  std::optional<bool> reorder, down;
  bool reroute = true;  // with `down`: the switches' routes move off the link (back at up)
  bool accept_degraded = false;
};
// The change a request asks for, checked by the scenario file's rules (`mtu` 0: all but a byte
// queue's minimum); errors name the option (--rate).
Result<LinkShape> link_change(const LinkRequest& req, uint32_t mtu);

struct LinkOutcome {
  std::string lab, link, action;  // action: set, down or up
  std::vector<LinkChange> changes;
  std::optional<std::string> rerouted;  // what moved, when routes moved
  Json to_json() const;
};
Result<LinkOutcome> change_link(const LinkRequest& req, const LabPaths& base);
// The same on an open lab through `dp` (the unit tests' in-memory datapath; paths.lab set).
Result<LinkOutcome> change_link(const LinkRequest& req, const LabModel& model,
                                const LabPaths& paths, LabDatapath& dp);

// A link shape as JSON, in the real fabric's units (status, link).
Json shape_json(const LinkShape& s);

// ---- host faults by hand ------------------------------------------------------------------

struct HostRequest {
  std::string lab, host;
  std::string action;  // crash, restart, freeze or thaw
};

struct HostOutcome {
  std::string lab, host, action;
  std::string detail;  // what was done (processes killed, links downed, tasks frozen)
  Json to_json() const;
};

Result<HostOutcome> host_fault(const HostRequest& req, const LabPaths& base);

// ---- graph ----------------------------------------------------------------------------------

// The model of `target`: a scenario file (a path, or a name ending .yaml/.yml) or a running lab.
Result<LabModel> topology_of(const std::string& target, const LabPaths& base);
// Its nodes (role, tier, rank) and links (ends, class, the scenario's shape each way).
Json topology_json(const LabModel& m);

// ---- status ---------------------------------------------------------------------------------

// A lab's state as `status --json` prints it: nodes, links with each direction's shape and
// counters (real-fabric units), the link model, rdma devices. A lab across machines: this
// machine's view (its nodes present, the others' not).
Json status_json(const LabStatus& s);
// The views of every machine of a lab across machines as one: each node, link end, direction
// and device from the machine that holds it.
Json merge_status(const std::vector<Json>& parts);

// The rows `status` shows: nodes matching one of `nodes`, links matching `links` ("a:b", globs).
struct StatusView {
  std::vector<std::string> nodes, links;
  bool all = false;  // every row of a big lab, not its summary
  bool filtered() const { return !nodes.empty() || !links.empty(); }
};
// The status object as `status --json` prints it: with "summary" (by tier and link class, the
// links down, the directions that dropped most; of the whole lab) and, for a filtered view,
// only the rows asked for and "filter".
Json status_view(Json status, const StatusView& view);

// Fields of a status object: a counter (0 when absent), a link up (both ends running, neither
// direction down), a direction's drops other than its queue's (loss, down, PFC's watchdog).
unsigned long long json_count(const Json& j, const char* key);
bool status_link_up(const Json& link);
unsigned long long status_drops(const Json& counters);
// The labs on this machine: {"labs": [{"lab", "state", "scenario"}, ...]}.
Json lab_list_json(const LabPaths& base);

// ---- run ------------------------------------------------------------------------------------

// The workload with the fault timeline and the telemetry sampler beside it, timed from t0
// (across machines: the launcher's common start); each step's end goes to the observer. Fills
// the report's steps, faults, samples and notes; false when a step failed.
bool play_workload(const LabModel& m, const LabPaths& paths, const WorkloadOptions& wo,
                   std::chrono::steady_clock::time_point t0, RunReport& report, Observer& observer);

}  // namespace fabemu::session
