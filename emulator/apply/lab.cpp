// Lab lifecycle: pool reservation under a lock, journal, apply with rollback, teardown.
#include "apply/lab.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <optional>
#include <set>

#include "scenario/loader.h"
#include "util/files.h"
#include "util/unique_fd.h"

namespace fabemu {
namespace {

// Serialises pool choice and journal creation between concurrent `up`s.
class RunLock {
 public:
  static Result<RunLock> take(const std::string& run_root) {
    FABEMU_TRY(make_dirs(run_root, 0755));
    std::string path = run_root + "/.lock";
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!fd.valid()) return errno_error("opening " + path);
    if (::flock(fd.get(), LOCK_EX) != 0) return errno_error("locking " + path);
    return RunLock(std::move(fd));
  }

 private:
  explicit RunLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;  // closing it releases the lock
};

Result<int> free_pool(const LabPaths& paths) {
  std::set<int> used;
  for (const auto& lab : list_labs(paths.run_root)) {
    LabPaths other = paths;
    other.lab = lab;
    if (auto j = read_journal(other.journal()); j && j->pool >= 0) used.insert(j->pool);
  }
  for (int i = 0; i < kMaxLabPools; ++i)
    if (!used.count(i)) return i;
  return make_error("no free address pool: " + std::to_string(kMaxLabPools) +
                    " labs are up; take one down first");
}

const char* phase_of(const Action& a) {
  if (std::holds_alternative<CreateNamespace>(a) || std::holds_alternative<SetSysctl>(a))
    return "namespaces";
  if (std::holds_alternative<CreateVeth>(a)) return "links";
  if (std::holds_alternative<AddAddress>(a) || std::holds_alternative<AddRoute>(a)) return "routes";
  return "files";
}

}  // namespace

Result<UpResult> lab_up(const Scenario& scenario, const LabPaths& paths, Backend& backend,
                        const UpOptions& options) {
  UpResult out;
  {
    auto lock = RunLock::take(paths.run_root);
    if (!lock) return lock.error();
    if (path_exists(paths.run_dir()))
      return make_error("lab '" + paths.lab + "' already exists (" + paths.run_dir() +
                        "); `fabemu down " + paths.lab + "` first, or pick another --lab");
    auto pool = free_pool(paths);
    if (!pool) return pool.error();
    auto model = build_model(scenario, *pool);
    if (!model) return model.error();
    out.model = std::move(*model);
    out.plan = make_plan(out.model, paths, *pool);

    FABEMU_TRY(make_dirs(paths.run_dir(), 0755));
    JournalFile j{paths.lab, *pool, options.scenario_file, out.plan.journal, false};
    auto written = write_journal(paths.journal(), j);
    if (!written) {
      ::rmdir(paths.run_dir().c_str());
      return written.error();
    }
  }

  auto fail = [&](const Error& e) -> Error {
    (void)backend.finish();
    auto down = lab_down(paths, backend);
    Error err = e.context("bringing up lab " + paths.lab);
    if (!down) err.message += " (and cleaning up failed too: " + down.error().what() + ")";
    return err;
  };
  if (auto r = fabemu::write_file(paths.scenario_copy(), options.scenario_text); !r)
    return fail(r.error());

  const size_t total = out.plan.actions.size();
  const char* phase = "";
  for (size_t i = 0; i < total; ++i) {
    const Action& a = out.plan.actions[i];
    const char* p = phase_of(a);
    if (options.progress && (p != phase || i % 256 == 0)) options.progress(p, i, total);
    phase = p;
    if (auto r = backend.apply(a); !r) return fail(r.error());
  }
  if (auto r = backend.finish(); !r) return fail(r.error());
  if (options.progress) options.progress("done", total, total);
  if (auto r = mark_journal_complete(paths.journal()); !r) return fail(r.error());
  return out;
}

Result<void> lab_down(const LabPaths& paths, Backend& backend) {
  auto j = read_journal(paths.journal());
  if (!j) {
    if (errno_of(j.error()) != ENOENT) return j.error();
    // No journal: nothing was created but (perhaps) the run dir itself.
    if (path_exists(paths.run_dir()))
      return backend.remove(JournalEntry{JournalEntry::Kind::Dir, paths.run_dir()});
    return ok();
  }
  FABEMU_TRY(backend.kill_processes(j->entries));
  // The run dir holds the journal: it goes last, and only when all else went, so that a
  // failed `down` can be retried.
  const JournalEntry run_dir{JournalEntry::Kind::Dir, paths.run_dir()};
  std::optional<Error> first;
  for (auto it = j->entries.rbegin(); it != j->entries.rend(); ++it) {
    if (*it == run_dir) continue;
    if (auto r = backend.remove(*it); !r && !first) first = r.error();
  }
  if (first) return first->context("taking down lab " + paths.lab);
  return backend.remove(run_dir);
}

Result<LabModel> lab_model(const LabPaths& paths, JournalFile* journal_out) {
  auto j = read_journal(paths.journal());
  if (!j) {
    if (errno_of(j.error()) == ENOENT) return make_error("no lab named '" + paths.lab + "'", ENOENT);
    return j.error();
  }
  auto scenario = load_scenario_file(paths.scenario_copy());
  if (!scenario) return scenario.error();
  auto model = build_model(*scenario, j->pool);
  if (journal_out) *journal_out = std::move(*j);
  return model;
}

}  // namespace fabemu
