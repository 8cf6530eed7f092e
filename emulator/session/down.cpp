// `down`: labs removed from their journals, then the kernel waited for.
#include <chrono>

#include "apply/journal.h"
#include "apply/kernel_backend.h"
#include "apply/netns_cleanup.h"
#include "apply/run_root.h"
#include "session/across.h"
#include "session/session.h"
#include "util/files.h"
#include "util/units.h"

namespace fabemu::session {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Result<DownOutcome> down(const DownRequest& req, const LabPaths& base) {
  if (req.labs.empty() && !req.all)
    return with_failure(make_error("down: name a lab, or --all"), Failure::BadInput);
  if (!req.on.empty()) return down_across(req.labs, req.on, base);
  FABEMU_TRY(need_root("down"));
  auto backend = KernelBackend::create(base.netns_dir);
  if (!backend) return backend.error();
  DownOutcome out;
  // The kernel frees the namespaces afterwards, under the lock a next lab's `up` needs: wait,
  // so that the next lab comes up as fast as a first (and the lab's memory is back).
  std::optional<NetnsCleanupWatch> watch;
  if (req.wait_for_kernel) {
    if (auto w = NetnsCleanupWatch::create())
      watch.emplace(std::move(*w));
    else
      out.kernel_note = "cannot wait for the kernel to free the lab: " + describe(w.error());
  }
  size_t taken_down = 0;
  for (const auto& lab : req.all ? list_labs(base.run_root) : req.labs) {
    DownOutcome::Lab& r = out.labs.emplace_back();
    r.lab = lab;
    LabPaths paths = base;
    paths.lab = lab;
    // An agent still building or running this machine's part of the lab stops first.
    auto stopped = stop_agent(base.run_root, lab);
    if (!stopped) {
      r.error = stopped.error();
      continue;
    }
    r.agent_stopped = *stopped;
    if (!req.all && !path_exists(paths.run_dir())) {
      r.error = with_failure(make_error("down: no lab named '" + lab + "'"), Failure::NoLab);
      continue;
    }
    const auto start = Clock::now();
    if (auto done = lab_down(paths, **backend, watch ? &*watch : nullptr); !done) {
      r.error = done.error();
      continue;
    }
    r.seconds = seconds_since(start);
    r.taken_down = true;
    ++taken_down;
  }
  if (taken_down > 0 && watch) {
    const auto start = Clock::now();
    if (auto w = watch->wait(std::chrono::seconds(60)); !w)
      out.kernel_note = "not waiting for the kernel any longer: " + describe(w.error());
    else
      out.kernel_seconds = seconds_since(start);
  }
  return out;
}

std::optional<Failure> DownOutcome::failure() const {
  std::optional<Failure> worst;
  for (const Lab& l : labs) {
    if (!l.error) continue;
    const Failure f = failure_of(*l.error);
    // No such lab among several named: a failure of the whole, as any other.
    worst = (f == Failure::NoLab && labs.size() == 1) ? f : Failure::Failed;
    if (worst == Failure::Failed) break;
  }
  return worst;
}

Json DownOutcome::to_json() const {
  Json list = Json::array();
  for (const Lab& l : labs) {
    Json j = {{"lab", l.lab},
              {"taken_down", l.taken_down},
              {"agent_stopped", l.agent_stopped},
              {"seconds", l.seconds}};
    j["error"] = l.error ? Json(l.error->what()) : Json(nullptr);
    if (l.machines) j["machines"] = l.machines;
    list.push_back(std::move(j));
  }
  Json j = {{"schema", kSchemaVersion}, {"command", "down"}, {"labs", list}};
  j["kernel_seconds"] = kernel_seconds ? Json(*kernel_seconds) : Json(nullptr);
  j["kernel_note"] = kernel_note.empty() ? Json(nullptr) : Json(kernel_note);
  return j;
}

}  // namespace fabemu::session
