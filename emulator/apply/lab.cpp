// Lab lifecycle: pool reservation under a lock, journal, apply with rollback, teardown.
#include "apply/lab.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>

#include "apply/frr.h"
#include "apply/netns_cleanup.h"
#include "apply/run_root.h"
#include "plan/frr.h"
#include "plan/partition.h"
#include "scenario/loader.h"
#include "util/files.h"
#include "util/units.h"

namespace fabemu {
namespace {

Result<int> free_pool(const LabPaths& paths) {
  const auto free = free_pools(paths);
  if (!free.empty()) return free.front();
  return make_error("no free address pool: " + std::to_string(kMaxLabPools) +
                    " labs are up; take one down first");
}

// The phase an action belongs to, for progress and timings; nullptr = the current one.
const char* phase_of(const Action& a) {
  if (std::holds_alternative<CreateNamespace>(a)) return "namespaces";
  if (std::holds_alternative<CreateVeth>(a)) return "links";
  if (std::holds_alternative<AddAddress>(a) || std::holds_alternative<AddRoute>(a) ||
      std::holds_alternative<AddNeighbour>(a))
    return "routes";
  if (std::holds_alternative<MakeDir>(a) || std::holds_alternative<WriteFile>(a)) return "files";
  if (std::holds_alternative<CreateCgroup>(a)) return "cgroups";
  if (std::holds_alternative<CreateRxe>(a)) return "rdma";
  if (std::holds_alternative<StartOvs>(a) || std::holds_alternative<ConfigureOvs>(a)) return "ovs";
  if (std::holds_alternative<StartRouter>(a)) return "bgp";
  if (std::holds_alternative<AwaitRoutes>(a)) return "converge";
  if (std::holds_alternative<LoadShaper>(a) || std::holds_alternative<ShapePort>(a) ||
      std::holds_alternative<BalanceSwitch>(a))
    return "shaping";
  return nullptr;
}

// Detaches the run dir's tmpfs (and every pin in it: the lab's namespaces go with them), then
// removes the directory.
Result<void> remove_run_dir(const LabPaths& paths, Backend& backend) {
  FABEMU_TRY(backend.remove(JournalEntry{JournalEntry::Kind::Mount, paths.run_dir()}));
  std::error_code ec;
  std::filesystem::remove_all(paths.run_dir(), ec);
  if (ec) return make_error("removing " + paths.run_dir(), ec.value());
  return ok();
}

}  // namespace

std::vector<int> free_pools(const LabPaths& paths) {
  std::set<int> used;
  for (const auto& lab : list_labs(paths.run_root)) {
    LabPaths other = paths;
    other.lab = lab;
    if (auto j = read_journal(other.journal()); j && j->pool >= 0) used.insert(j->pool);
  }
  std::vector<int> out;
  for (int i = 0; i < kMaxLabPools; ++i)
    if (!used.count(i)) out.push_back(i);
  return out;
}

Result<UpResult> lab_up(const Scenario& scenario, const LabPaths& paths, Backend& backend,
                        const UpOptions& options) {
  UpResult out;
  {
    auto lock = RunLock::take(paths.run_root);
    if (!lock) return lock.error();
    if (path_exists(paths.run_dir()))
      return make_error("lab '" + paths.lab + "' already exists (" + paths.run_dir() +
                        "); `fabemu down " + paths.lab + "` first, or pick another --lab");
    // A lab across machines has one pool on all of them, agreed by the launcher.
    Result<int> pool = options.pool ? Result<int>(*options.pool) : free_pool(paths);
    if (!pool) return pool.error();
    if (options.pool)
      if (auto free = free_pools(paths); std::find(free.begin(), free.end(), *pool) == free.end())
        return make_error("address pool " + std::to_string(*pool) + " is taken on this machine",
                          EBUSY);
    auto model = build_model(scenario, *pool);
    if (!model) return model.error();
    out.model = std::move(*model);
    if (options.time_scale) {
      out.model.time_scale = *options.time_scale;
      out.model.time_scale_why = options.time_scale_why;
    }
    if (options.part) {
      auto placement = partition(out.model, static_cast<int>(options.part->machines.size()));
      if (!placement) return placement.error();
      out.model.part = *options.part;
      out.model.part->placement = std::move(*placement);
    }
    if (!out.model.bgp.empty()) {
      // Refused before anything is made: timers FRR would not take, or no FRR.
      FABEMU_TRY(frr_timers_fit(out.model));
      if (auto frr = find_frr(frr_daemons(out.model)); !frr) return frr.error();
    }
    out.plan = make_plan(out.model, paths, *pool, options.plan);
    out.plan_options = options.plan;
    out.model.rdma = options.plan.rdma;
    out.model.ovs = options.plan.ovs;

    FABEMU_TRY(make_dirs(paths.run_dir(), 0755));
    JournalFile j{paths.lab, *pool, options.scenario_file, out.plan.journal, true, false};
    auto written = backend.mount_run_dir(paths.run_dir());
    if (written) written = write_journal(paths.journal(), j);
    if (!written) {
      (void)remove_run_dir(paths, backend);
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

  using Clock = std::chrono::steady_clock;
  const size_t total = out.plan.actions.size();
  const char* phase = "setup";
  auto phase_start = Clock::now();
  auto end_phase = [&] {
    auto now = Clock::now();
    double secs = std::chrono::duration<double>(now - phase_start).count();
    phase_start = now;
    for (auto& [name, t] : out.phase_seconds)
      if (name == phase) return void(t += secs);
    out.phase_seconds.emplace_back(phase, secs);
  };
  backend.start(out.plan);
  auto parallel = out.plan.parallel.begin();
  for (size_t i = 0; i < total; ++i) {
    if (options.interrupt && options.interrupt->load())
      return fail(make_error(printf_string("interrupted by signal %d after %zu of %zu actions",
                                           options.interrupt->load(), i, total),
                             EINTR));
    const Action& a = out.plan.actions[i];
    const char* p = phase_of(a);
    while (parallel != out.plan.parallel.end() && parallel->end <= i) ++parallel;  // empty ones
    // A parallel range goes in one call, timed as the phase of its first action with one.
    const bool range = parallel != out.plan.parallel.end() && parallel->begin == i;
    if (range)
      for (size_t k = i; k < parallel->end && !p; ++k) p = phase_of(out.plan.actions[k]);
    if (p && p != phase) {
      end_phase();
      phase = p;
      if (options.progress) options.progress(p, i, total);
    } else if (options.progress && i % 256 == 0) {
      options.progress(phase, i, total);
    }
    if (range) {
      const size_t end = parallel->end;
      ++parallel;
      auto r = backend.apply_parallel(std::span(out.plan.actions).subspan(i, end - i));
      if (!r) return fail(r.error());
      i = end - 1;
      continue;
    }
    if (auto r = backend.apply(a); !r) return fail(r.error());
  }
  if (auto r = backend.finish(); !r) return fail(r.error());
  if (options.interrupt && options.interrupt->load())
    return fail(make_error(
        printf_string("interrupted by signal %d at the end", options.interrupt->load()), EINTR));
  end_phase();
  if (options.progress) options.progress("done", total, total);
  if (auto r = mark_journal_complete(paths.journal()); !r) return fail(r.error());
  return out;
}

Result<void> lab_down(const LabPaths& paths, Backend& backend, NetnsCleanupWatch* watch) {
  auto j = read_journal(paths.journal());
  if (!j) {
    if (errno_of(j.error()) != ENOENT) return j.error();
    // No journal: nothing was created but (perhaps) the run dir and its tmpfs.
    return remove_run_dir(paths, backend);
  }
  if (!j->planned) return remove_run_dir(paths, backend);  // killed while writing it
  FABEMU_TRY(backend.kill_processes(j->entries));
  // The run dir holds the journal and the pins: it goes last, in one unmount, and only when
  // all else went, so that a failed `down` can be retried.
  const std::string inside = paths.run_dir() + "/";
  std::optional<Error> first;
  for (auto it = j->entries.rbegin(); it != j->entries.rend(); ++it) {
    if (it->kind == JournalEntry::Kind::Mount || it->path.rfind(inside, 0) == 0) continue;
    if (auto r = backend.remove(*it); !r && !first) first = r.error();
  }
  if (first) return first->context("taking down lab " + paths.lab);
  // Probed while its pins still hold it; forgotten if they stay (waiting would time out).
  const size_t probes = watch ? watch->probes() : 0;
  if (watch)
    for (auto it = j->entries.rbegin(); it != j->entries.rend(); ++it)
      if (it->kind == JournalEntry::Kind::Netns && path_exists(it->path)) {
        (void)watch->probe(it->path);
        break;
      }
  if (auto r = backend.remove(JournalEntry{JournalEntry::Kind::Mount, paths.run_dir()}); !r) {
    if (watch) watch->forget(probes);
    return r.error();
  }
  // Normally no-ops now; they matter when the run dir was not a mount point of its own.
  for (auto it = j->entries.rbegin(); it != j->entries.rend(); ++it)
    if (it->kind != JournalEntry::Kind::Mount && it->path.rfind(inside, 0) == 0)
      FABEMU_TRY(backend.remove(*it));
  return remove_run_dir(paths, backend);
}

Result<LabModel> lab_model(const LabPaths& paths, JournalFile* journal_out) {
  auto j = read_journal(paths.journal());
  if (!j) {
    if (errno_of(j.error()) == ENOENT)
      return make_error("no lab named '" + paths.lab + "'", ENOENT);
    return j.error();
  }
  auto scenario = load_scenario_file(paths.scenario_copy());
  if (!scenario) return scenario.error();
  auto model = build_model(*scenario, j->pool);
  if (!model) return model.error();
  if (ovs_switches(*model)) {
    auto text = read_file(paths.ovs_file());
    if (!text) return text.error();
    auto choice = parse_ovs_choice(*text, paths.ovs_file());
    if (!choice) return choice.error();
    model->ovs = std::move(*choice);
  }
  // The run dir's record of `up`'s rdma decision; labs made before it was kept have no rxe.
  if (auto text = read_file(paths.rdma_file())) {
    auto choice = parse_rdma_choice(*text, paths.rdma_file());
    if (!choice) return choice.error();
    model->rdma = std::move(*choice);
  } else {
    model->rdma.why_not = "no record in " + paths.rdma_file();
  }
  // A lab across machines: the part this machine built.
  if (auto text = read_file(paths.part_file()))
    FABEMU_TRY(parse_part(*text, paths.part_file(), *model));
  // How much slower than the real fabric it runs; labs made before it was kept run in real time.
  if (auto text = read_file(paths.time_scale_file()))
    FABEMU_TRY(parse_time_scale(*text, paths.time_scale_file(), *model));
  if (journal_out) *journal_out = std::move(*j);
  return model;
}

}  // namespace fabemu
