// Lab lifecycle: bring a planned lab up through a backend (journal first), take it down.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apply/backend.h"
#include "apply/journal.h"
#include "plan/plan.h"

namespace fabemu {

// Called as work proceeds: phase name, actions done, actions total.
using Progress = std::function<void(std::string_view phase, size_t done, size_t total)>;

struct UpOptions {
  std::string scenario_text;  // copied into the lab's run dir, so `status` sees what was built
  std::string scenario_file;
  Progress progress;
  PlanOptions plan;  // what the kernel lets the link model do
  // The time scale `up` decided (--time-scale, `auto`); unset: the scenario's number.
  std::optional<TimeScale> time_scale;
  std::string time_scale_why;
  // A lab across machines: this machine's index, the machines and their underlay (the
  // placement is computed here), and the address pool all of them use.
  std::optional<MachinePart> part;
  std::optional<int> pool;
  // Set (to a signal's number) by a handler of SIGINT/SIGTERM: lab_up stops between actions and
  // takes down what it made; the error's errno is EINTR.
  const std::atomic<int>* interrupt = nullptr;
};

// Address pools no lab on this machine uses, ascending (a launcher intersects the machines').
std::vector<int> free_pools(const LabPaths& paths);

struct UpResult {
  LabModel model;
  Plan plan;
  PlanOptions plan_options;
  std::vector<std::pair<std::string, double>> phase_seconds;  // where the time went
};

// Reserves an address pool for the lab, writes its journal, then applies the plan. On failure
// everything already made is removed again and the error says which action failed.
Result<UpResult> lab_up(const Scenario& scenario, const LabPaths& paths, Backend& backend,
                        const UpOptions& options = {});

class NetnsCleanupWatch;

// Removes exactly what the lab's journal lists, in reverse, then the journal itself.
// Succeeds (doing nothing) when the lab does not exist. With a watch, one of the lab's
// namespaces is probed just before its pins go, so that the watch can wait for the kernel to
// free the lab (best effort: a namespace that cannot be probed is not; nor is a lab whose pins
// stay because the unmount failed).
Result<void> lab_down(const LabPaths& paths, Backend& backend, NetnsCleanupWatch* watch = nullptr);

// The model of a running lab, rebuilt from the scenario copy and pool in its run dir.
Result<LabModel> lab_model(const LabPaths& paths, JournalFile* journal_out = nullptr);

}  // namespace fabemu
