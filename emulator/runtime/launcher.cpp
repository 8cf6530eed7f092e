// The Slurm launcher: scontrol for the machine list, one srun step per machine.
#include "runtime/launcher.h"

#include <cstdlib>
#include <sstream>

#include "util/process.h"

namespace fabemu {
namespace {

using namespace std::chrono_literals;

class SlurmLauncher : public Launcher {
 public:
  explicit SlurmLauncher(std::string nodelist) : nodelist_(std::move(nodelist)) {}
  std::string name() const override { return "slurm"; }

  Result<std::vector<std::string>> machines() override {
    if (!machines_.empty()) return machines_;
    // scontrol expands Slurm's host lists ("m[1-3],gpu07") as Slurm does.
    CommandOptions o;
    o.timeout = 30s;
    auto out = run_command({"scontrol", "show", "hostnames", nodelist_}, o);
    if (!out) return out.error().context("expanding SLURM_JOB_NODELIST " + nodelist_);
    std::istringstream lines(*out);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) machines_.push_back(line);
    if (machines_.empty()) return make_error("the allocation has no machines", EINVAL);
    return machines_;
  }

  Result<std::vector<Reply>> run_each(const std::vector<std::string>& on,
                                      const std::vector<std::string>& argv,
                                      std::chrono::seconds timeout, Output output) override {
    // One step per machine, all at once: each its own exit status and output. --overlap lets
    // a step run beside a long one (a workload) on the same machine.
    std::vector<Process> steps;
    for (const std::string& m : on) {
      ProcessSpec spec;
      spec.argv = step_argv(m, argv);
      if (output == Output::Capture) spec.out = spec.err = Stdio::Pipe;
      spec.own_group = true;
      auto p = Process::start(spec);
      if (!p) return p.error().context("starting srun on " + m);
      steps.push_back(std::move(*p));
    }
    const auto deadline = ProcessClock::now() + timeout;
    std::vector<Reply> out;
    for (size_t i = 0; i < steps.size(); ++i) {
      Reply r;
      r.machine = on[i];
      if (output == Output::Capture) collect_output(steps[i], deadline, r.out, r.err);
      const auto status = steps[i].wait_until(deadline);
      r.status = status ? *status : -1;
      if (!status) steps[i].stop(std::chrono::milliseconds(3000));
      out.push_back(std::move(r));
    }
    return out;
  }

  Result<int> run_attached(const std::string& machine,
                           const std::vector<std::string>& argv) override {
    ProcessSpec spec;
    spec.argv = step_argv(machine, argv);
    spec.stdin_null = false;
    auto p = Process::start(spec);
    if (!p) return p.error();
    return p->wait();
  }

 private:
  static std::vector<std::string> step_argv(const std::string& machine,
                                            const std::vector<std::string>& argv) {
    std::vector<std::string> out = {"srun",       "--overlap", "--nodes=1",
                                    "--ntasks=1", "--quiet",   "--nodelist=" + machine};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }

  std::string nodelist_;
  std::vector<std::string> machines_;
};

}  // namespace

Result<std::unique_ptr<Launcher>> slurm_launcher() {
  const char* nodelist = std::getenv("SLURM_JOB_NODELIST");
  if (!nodelist || !*nodelist)
    return make_error(
        "--on slurm runs inside a Slurm allocation (salloc -N M, or an sbatch script), and "
        "SLURM_JOB_NODELIST is not set",
        EINVAL);
  if (!find_program("srun") || !find_program("scontrol"))
    return make_error("--on slurm needs srun and scontrol (apt install slurm-client)", ENOENT);
  return std::unique_ptr<Launcher>(new SlurmLauncher(nodelist));
}

Result<std::unique_ptr<Launcher>> make_launcher(const std::string& name) {
  if (name == "slurm") return slurm_launcher();
  return make_error("--on: unknown launcher '" + name + "'; valid: slurm", EINVAL);
}

}  // namespace fabemu
