// Launching fabemu's agents on the machines of a lab that spans several. The agents take only
// their argv (and print JSON), so nothing of them depends on what starts them: Slurm's srun
// here; a Kubernetes launcher (an Indexed Job or a DaemonSet of privileged pods, exec'ing into
// the pod of a node) would implement the same interface (docs/cluster.md).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "util/result.h"

namespace fabemu {

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;  // "slurm"
  // The allocation's machines, in its order: the order of a lab's parts.
  virtual Result<std::vector<std::string>> machines() = 0;

  struct Reply {
    std::string machine;
    int status = -1;  // exit status; -1: it never finished (killed at the deadline)
    std::string out, err;
  };
  // Capture: each machine's output kept in its reply. Attached: written to ours as it comes
  // (a workload's table), nothing kept.
  enum class Output { Capture, Attached };
  // `argv` on each of `on` at once; waits for all of them (those past the deadline are killed).
  virtual Result<std::vector<Reply>> run_each(const std::vector<std::string>& on,
                                              const std::vector<std::string>& argv,
                                              std::chrono::seconds timeout,
                                              Output output = Output::Capture) = 0;
  // `argv` on one machine with our standard input and output (`exec`): its exit status.
  virtual Result<int> run_attached(const std::string& machine,
                                   const std::vector<std::string>& argv) = 0;
};

// Inside a Slurm allocation (salloc, sbatch): its machines from SLURM_JOB_NODELIST, each agent
// started by `srun --overlap -N1 -n1 -w MACHINE`. An error naming what is missing elsewhere.
Result<std::unique_ptr<Launcher>> slurm_launcher();

// The launcher `--on NAME` names ("slurm").
Result<std::unique_ptr<Launcher>> make_launcher(const std::string& name);

}  // namespace fabemu
