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
#include "doctor/probe.h"
#include "plan/lab_paths.h"
#include "report/report.h"
#include "runtime/lab_status.h"
#include "runtime/perf.h"
#include "runtime/reachability.h"
#include "runtime/spawn.h"
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

// The exit statuses of fabemu's commands (README, `fabemu --help`): what the CLI exits with and
// what a machine's agent or command said, read back by the launching side of a lab across
// machines.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;     // the system refused or a check failed
inline constexpr int kExitBadInput = 2;   // bad command line or scenario file
inline constexpr int kExitNoLab = 3;      // the named lab does not exist
inline constexpr int kExitNeedsRoot = 4;  // must run as root
// The scenario is fine but this machine cannot build it (no fq for a delay, no rxe for rdma:
// on, no BPF qdisc for hold: queue, ...): the message says what the probe saw. Test runners
// skip on it.
inline constexpr int kExitUnsupported = 5;
Failure failure_of_exit(int status);

// Fails with NeedsRoot, naming the command, unless this process is root.
Result<void> need_root(const char* command);

// An error reading a lab's files, as NoLab when they are not there (ENOENT).
Error absent_is_no_lab(Error e);
// A running lab's model from its journal (and the journal, when asked); NoLab when there is no
// such lab.
Result<LabModel> open_lab(const LabPaths& paths, JournalFile* journal = nullptr);

struct UpOutcome;

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
  // `run`: the lab is up; the reachability check answered, in `seconds` of wall clock.
  virtual void lab_up(const UpOutcome& /*up*/) {}
  virtual void reachability(const LabModel& /*model*/, const ReachabilityReport& /*reach*/,
                            double /*seconds*/) {}
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
  // `run --replay FILE --format F [--comm-groups G]`: the workload is this one replay step
  // instead.
  std::string replay;
  std::string replay_format = "simai";
  std::string replay_groups;
  // One machine's part of a lab across machines: every machine's name (the allocation's
  // order), the pool they agreed on, the directory they share.
  std::vector<std::string> cluster;
  std::optional<int> pool;
  std::string shared_dir;
  // The launching side: a launcher's name ("slurm"): the lab across the machines of its
  // allocation (an agent per machine; docs/cluster.md). Empty: on this machine.
  std::string on;
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
  UpResult up;  // across machines: the whole lab's model and counts, routes summed
  std::vector<std::string> notes;  // what was built and how (time scale, link model, ...)
  // A lab across machines: the launcher, each machine's part, the links cut into tunnels.
  struct Machine {
    std::string name;
    int hosts = 0, switches = 0, tunnels = 0;
    double seconds = 0;
    std::string nodes;  // "h1-h8, leaf1" (plan/partition.h describe_nodes)
  };
  std::string launcher;
  std::vector<Machine> machines;
  int cut_links = 0;
  Json to_json() const;
};
// Builds the prepared lab. `interrupt` (InterruptGuard::signal()) stops it between actions: what
// was made is taken down and the error's kind is Interrupted.
Result<UpOutcome> up(Prepared prepared, const std::string& scenario_file, Observer& observer,
                     const std::atomic<int>* interrupt = nullptr);
// The notes about what `up` built (time scale, link model, switches, routing, rdma).
std::vector<std::string> up_notes(const Scenario& s, const UpResult& up);
// `up` whole: prepare and up on this machine, or with `req.on` across the machines of the
// launcher's allocation (each machine's agent checks its part and says what pools it has free
// and what time scale it needs; they agree, the record of the lab is kept, then each builds its
// part; a part that fails takes the others down again).
Result<UpOutcome> up_lab(const UpRequest& req, const LabPaths& base, Observer& observer,
                         const std::atomic<int>* interrupt = nullptr);

// ---- down -----------------------------------------------------------------------------------

struct DownRequest {
  std::vector<std::string> labs;
  bool all = false;  // every lab on this machine
  bool wait_for_kernel = true;
  std::string on;  // a lab across machines: every machine's part, through this launcher
};
struct DownOutcome {
  struct Lab {
    std::string lab;
    bool taken_down = false;
    bool agent_stopped = false;  // an agent still working on it here was stopped first
    double seconds = 0;
    std::optional<Error> error;
    size_t machines = 0;  // across machines: on how many it was taken down
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
  std::string on;  // a lab across machines: each machine changes the directions leaving its nodes
};
// The change a request asks for, checked by the scenario file's rules (`mtu` 0: all but a byte
// queue's minimum); errors name the option (--rate).
Result<LinkShape> link_change(const LinkRequest& req, uint32_t mtu);

struct LinkOutcome {
  std::string lab, link, action;  // action: set, down or up
  std::vector<LinkChange> changes;
  std::optional<std::string> rerouted;  // what moved, when routes moved
  // Across machines: the machines that made the changes (each the directions leaving its
  // nodes), in the allocation's order.
  std::vector<std::string> machines;
  Json to_json() const;
};
Result<LinkOutcome> change_link(const LinkRequest& req, const LabPaths& base);
// The same on an open lab through `dp` (the unit tests' in-memory datapath; paths.lab set).
Result<LinkOutcome> change_link(const LinkRequest& req, const LabModel& model,
                                const LabPaths& paths, LabDatapath& dp);

// A link shape as JSON, in the real fabric's units (status, link), and back.
Json shape_json(const LinkShape& s);
LinkShape shape_from_json(const Json& j);

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

// ---- doctor ---------------------------------------------------------------------------------

struct DoctorOutcome {
  KernelInfo kernel;
  std::vector<FeatureProbe> probes;  // one per feature of the doctor's catalog, in its order
  Json to_json() const;
};
// Every probe, afresh (doctor/probe.h); `calibrate` measures this machine's capacity now (a lab
// for ~30 s, its trials to the observer as remarks) instead of showing what this boot kept.
DoctorOutcome doctor(bool calibrate, const std::string& run_root, Observer& observer);
// What measures the capacity for the doctor's probe (`up` with time_scale: auto, `doctor
// --calibrate`): runtime/calibrate.h's lab, under `run_root`.
Calibrator calibrator(const std::string& run_root);

// ---- perf -----------------------------------------------------------------------------------

// perftest (over the hosts' rxe devices) or ucx_perftest between two hosts of a lab.
struct PerfResult {
  std::string lab;
  PerfSetup setup;  // what ran where (the request in it)
  PerfOutcome outcome;
  TimeScale time_scale;
  // The tool's table as the lab's wall clock measured it and in the real fabric's units, and
  // the client's output (captured with `capture`).
  Json to_json() const;
};
// What runs where goes to the observer as remarks before the pair runs.
Result<PerfResult> perf(const std::string& lab, const PerfRequest& req, const LabPaths& base,
                        Observer& observer);

// ---- predict --------------------------------------------------------------------------------

// What the link model predicts for each collective in a lab that is up, from the shapes its
// links have now (`transport` tcp or ibverbs): the collectives' models at the top level beside
// the header (schema, command, lab, transport), the object fabemu-collective --predict reads as
// it is (it skips keys that name no collective).
Result<Json> predict(const std::string& lab, const std::string& transport, const LabPaths& base);

// `predict LAB --replay FILE`: the model's iteration of a training step on a lab that is up (its
// routes and current link shapes), the ranks placed as `run` places them (docs/replay.md).
struct ReplayPrediction {
  ReplayStep step;
  std::vector<std::string> placement;  // each rank's host
  std::string placement_line;          // "placement: 0 h1, ...; tp groups under one switch: .."
  replay::IterationSummary model;
  Json to_json(const std::string& lab, const std::string& transport) const;
};
Result<ReplayPrediction> predict_replay(const std::string& lab, const std::string& transport,
                                        const ReplayStep& step, const LabPaths& base);

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
// A lab's status object (status_json): this machine's, or with `on` every machine's merged.
// Its "state" is "up" when every part of the lab is there.
Result<Json> lab_status(const std::string& lab, const std::string& on, const LabPaths& base);

// ---- exec -----------------------------------------------------------------------------------

struct ExecRequest {
  std::string target;  // LAB:NODE, or LAB with `all`
  bool all = false;    // every host of the lab
  bool no_tag = false;
  bool keep_output = false;  // with `all`: each host's output kept in the outcome, not shown
  std::vector<std::string> argv;
  std::string clock;  // "fabric" or "wall" over the scenario's hosts.clock; empty: its own
  std::string on;     // a lab across machines: through this launcher
};
struct ExecOutcome {
  std::string lab;
  // The exit status: one node's program's, the first host's that failed (all), or 127/126 when
  // the program could not be started (`exec_error` says why, with the errno's words).
  int status = 0;
  std::optional<Error> exec_error;
  std::vector<NodeExit> hosts;  // all: each host's, in the lab's order
  Json to_json() const;
};
// One node: the program replaces this process (exec), so this returns only when it could not.
// All: every host's at once (across machines: each machine its own hosts').
Result<ExecOutcome> exec(const ExecRequest& req, const LabPaths& base);

// ---- agent: one machine's part of a lab across machines -----------------------------------

// What a launcher starts on every machine (`fabemu agent ACTION`): it works on this machine's
// part only, and its answer depends on nothing of what started it.
struct AgentRequest {
  std::string action;       // probe, up, reach or run
  UpRequest up;             // probe, up: the scenario, the machines, the pool, the shared dir
  std::string lab;          // reach, run
  std::string run_id;       // run: the Gloo rendezvous prefix every machine shares
  int64_t start_at_ns = 0;  // run: the workload's start, CLOCK_REALTIME
  std::string out;          // run: where this machine's part of the report goes
};
// The answer the launching side reads: a JSON object (probe: free pools, the lab there or not,
// the time scale this part needs; up: this part's counts and the lab's notes), reach: the pairs
// from this machine's hosts as lines (report/run_part.h), run: nothing (standard output carries
// the ranks' own; the part goes to the shared directory).
Result<std::string> agent(const AgentRequest& req, const LabPaths& base, Observer& observer);

// ---- run ------------------------------------------------------------------------------------

// The workload with the fault timeline and the telemetry sampler beside it, timed from its start
// (across machines: the launcher's common start; otherwise once the sampler and the faults are
// ready); each step's end goes to the observer. Fills the report's steps, faults, samples and
// notes; false when a step failed.
bool play_workload(const LabModel& m, const LabPaths& paths, const WorkloadOptions& wo,
                   std::optional<std::chrono::steady_clock::time_point> common_start,
                   RunReport& report, Observer& observer);

// Where `run` writes its report unless asked: fabemu-reports/LAB-DATE-TIME.
std::string default_report_dir(const std::string& lab);

struct RunRequest {
  UpRequest up;            // the lab, on this machine or across machines (`up.on`)
  std::string report_dir;  // where report.html, report.jsonl and topology.svg go (default_...)
  bool keep = false;       // leave the lab up
};
struct RunOutcome {
  UpOutcome up;
  RunReport report;
  std::string workload_not_run;  // why the workload did not run, when it has steps and did not
  std::string report_dir;
  std::optional<Error> report_error;  // the report could not be written
  bool kept = false;
  std::optional<DownOutcome> down;  // the lab taken down afterwards (not with `keep`)
  std::optional<Error> down_error;
  bool ok = false;  // every pair answered, every step and expectation held, the report written
  // `run --json`: the report's records but the telemetry samples (report.jsonl keeps them).
  Json to_json() const;
};
// `run`: the lab up, every pair of hosts checked, the workload with the fault timeline and the
// sampler beside it (each step's end to the observer), the faults not played accounted for,
// expectations checked, the report written, the lab taken down. A failure to bring the lab up
// is the error; everything after it is in the outcome.
Result<RunOutcome> run(const RunRequest& req, const LabPaths& base, Observer& observer,
                       const std::atomic<int>* interrupt = nullptr);

}  // namespace fabemu::session
