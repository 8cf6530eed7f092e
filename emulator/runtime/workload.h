// Running a scenario's workload steps in a lab that is up: the collective benchmark over Gloo
// (one rank per host) or MPI (mpirun in the first host, daemons started through `fabemu rsh`),
// and user programs. Every step is bounded by a timeout.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "results/replay.h"
#include "results/workload.h"
#include "runtime/spawn.h"
#include "util/result.h"

namespace fabemu {

struct WorkloadOptions {
  std::string fabemu;        // this binary: the rsh agent mpirun starts its daemons with
  std::string collective;    // the fabemu-collective binary
  std::string scenario_dir;  // exec steps start here, so relative paths mean the scenario's
  std::chrono::seconds default_timeout{600};  // of wall clock
  bool echo = true;  // the programs' output to ours (false: dropped, as calibration wants)
  // Gloo's rendezvous prefix (with the step's index); empty: one of this process's own. The
  // machines of a lab across machines share one.
  std::string run_id;
};

struct StepResult {
  std::string title;  // "workload[0] allreduce (gloo, tcp)"
  bool ok = false;
  std::string failure;  // what went wrong, naming the host or the timeout
  double seconds = 0;
  std::string json_lines;         // the benchmark's JSON lines file (collectives), when written
  std::string note;               // something the numbers say that users should know
  std::vector<FlowResult> flows;  // incast steps
  std::string table;              // incast steps: the flows as a table for the terminal
  // An incast step's receiver: what arrived in all over the time any flow was arriving (the
  // real fabric's bit/s); unset for other steps.
  std::optional<double> receiver_bps;
  std::optional<ReplayResult> replay;  // replay steps
};

// The lab's topology with the shapes its links have now (`link set` may have changed them).
Topology live_topology(const LabModel& m, const LabPaths& paths);

// "h3 exited with 1, ...", or the timeout; "" when every host's program succeeded.
std::string describe_exits(const std::vector<NodeExit>& exits, std::chrono::seconds timeout);

// Where the workload's programs are: fabemu-collective beside this binary (installed) or in
// the build tree's collective/ directory; exec steps start in the scenario file's directory.
WorkloadOptions workload_options(const std::string& scenario_file);

// Copies fabemu and fabemu-collective into the lab's shared directory and points `o` at the
// copies: hosts see the machine's files except /tmp (each has its own), and a build tree may
// well live under /tmp; mpirun's daemons and ranks must find both inside every host.
Result<void> stage_binaries(WorkloadOptions& o, const LabPaths& paths);

// "gloo/tcp", "mpi/ucx over ibverbs", ...: how a collective step will run in this lab.
// `auto` picks ibverbs when the lab's hosts have rxe devices.
std::string resolve_transport(const std::string& transport, bool lab_has_rdma);

// The fabemu-collective command line for a step (without the launcher), shared by the Gloo and
// MPI paths so both run the same benchmark.
std::vector<std::string> collective_argv(const WorkloadOptions& o, const CollectiveStep& c,
                                         const std::string& library, const std::string& transport,
                                         const std::string& run_id, const std::string& json_out,
                                         const std::string& predict, int timeout_s);

// The mpirun command that starts `ranks` ranks, one per host, over `transport`.
std::vector<std::string> mpirun_argv(const WorkloadOptions& o, const LabPaths& lab,
                                     const std::vector<std::string>& hosts,
                                     const std::string& library, const std::string& transport);

// The model's predictions (model/collective_model.h) for every collective over `transport`,
// from the shapes the lab's links have now (`link set` may have changed them).
std::string live_predictions(const LabModel& model, const LabPaths& paths,
                             const std::string& transport);

// Runs step `index` of the lab's workload: prints what the programs print, returns the verdict.
StepResult run_step(const LabModel& model, const LabPaths& paths, size_t index,
                    const WorkloadOptions& options);

}  // namespace fabemu
