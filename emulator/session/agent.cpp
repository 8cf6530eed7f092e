// `fabemu agent`: one machine's part of a lab across machines (session.h, AgentRequest).

#include <chrono>

#include "apply/kernel_backend.h"
#include "apply/link_control.h"
#include "apply/run_root.h"
#include "report/run_part.h"
#include "runtime/cluster.h"
#include "session/session.h"
#include "util/files.h"
#include "util/units.h"

namespace fabemu::session {
namespace {

using Clock = std::chrono::steady_clock;

// Which pools are free here, whether the lab exists, the time scale this machine's part needs:
// what the launcher agrees on before any machine builds.
Result<Json> agent_probe(const UpRequest& req, const LabPaths& base, Observer& observer) {
  auto p = prepare(req, base, observer);
  if (!p) return p.error();
  const MachinePart& part = *p->model.part;
  return Json{{"schema", kSchemaVersion},
              {"command", "agent"},
              {"action", "probe"},
              {"machine", part.machines[part.index]},
              {"index", part.index},
              {"underlay_dev", part.underlay_dev},
              {"free_pools", free_pools(p->paths)},
              {"lab_exists", path_exists(p->paths.run_dir())},
              {"time_scale", p->model.time_scale.factor},
              {"time_scale_why", p->model.time_scale_why},
              {"notes", p->notes}};
}

// The counts of the whole lab (every machine says the same): its plan, not this part's.
Json lab_counts(const Prepared& p, int pool, UpResult up) {
  LabModel all = up.model;
  all.part.reset();
  const Plan lab_plan = make_plan(all, p.paths, pool, up.plan_options);
  up.plan.shaped_ports = lab_plan.shaped_ports;
  up.plan.ovs_bridges = lab_plan.ovs_bridges;
  up.plan.rxe_devices = lab_plan.rxe_devices;
  std::vector<std::string> notes = up_notes(p.scenario, up);
  notes.insert(notes.end(), p.notes.begin(), p.notes.end());
  return {{"shaped_ports", up.plan.shaped_ports},
          {"ovs_bridges", up.plan.ovs_bridges},
          {"bgp_routers", up.plan.bgp_routers},
          {"rxe_devices", up.plan.rxe_devices},
          {"link_model", up.plan.shaped_ports ? std::string(shaping_mode_name(up.plan_options))
                                              : std::string("none")},
          {"notes", notes}};
}

Result<Json> agent_up(const UpRequest& req, const LabPaths& base, Observer& observer) {
  const auto start = Clock::now();
  if (!req.pool) return with_failure(make_error("agent up: --pool"), Failure::BadInput);
  auto p = prepare(req, base, observer);
  if (!p) return p.error();
  auto lock = AgentLock::take(base.run_root, p->paths.lab);
  if (!lock) return lock.error();
  if (auto made = make_dirs(p->model.part->shared_dir + "/" + p->paths.lab, 0777); !made)
    return made.error().context("the directory every machine shares");
  auto backend = KernelBackend::create(p->paths.netns_dir);
  if (!backend) return backend.error();
  UpOptions opts{p->text, req.scenario, nullptr, p->plan};
  opts.time_scale = p->model.time_scale;
  opts.time_scale_why = p->model.time_scale_why;
  opts.part = p->model.part;
  opts.pool = req.pool;
  auto up = lab_up(p->scenario, p->paths, **backend, opts);
  if (!up) return up.error();
  const LabModel& m = up->model;
  int hosts = 0, switches = 0, tunnels = 0;
  for (size_t n = 0; n < m.topo.nodes.size(); ++n)
    if (local_node(m, static_cast<int>(n)))
      ++(m.topo.nodes[n].role == Role::Host ? hosts : switches);
  for (const Link& l : m.topo.links) tunnels += local_node(m, l.a.node) != local_node(m, l.b.node);
  Json phases = Json::object();
  for (const auto& [phase, secs] : up->phase_seconds) phases[phase] = secs;
  Json j = lab_counts(*p, *req.pool, *up);
  j.update({{"schema", kSchemaVersion},
            {"command", "agent"},
            {"action", "up"},
            {"machine", m.part->machines[m.part->index]},
            {"seconds", seconds_since(start)},
            {"hosts", hosts},
            {"switches", switches},
            {"tunnels", tunnels},
            {"routes", up->plan.routes},
            {"phases", phases}});
  return j;
}

// ICMP from this machine's hosts to every host of the lab.
Result<std::string> agent_reach(const LabPaths& paths) {
  auto m = open_lab(paths);
  if (!m) return m.error();
  auto reach = check_reachability(*m, paths);
  if (!reach) return reach.error();
  return pairs_text(reach->pairs);
}

// This machine's ranks, faults and telemetry from the common start; its part of the report
// into `out` (standard output carries the programs' own output, so the answer is nothing).
Result<void> agent_run(const AgentRequest& a, const LabPaths& paths) {
  auto lock = AgentLock::take(paths.run_root, paths.lab);
  if (!lock) return lock.error();
  JournalFile journal;
  auto m = open_lab(paths, &journal);
  if (!m) return m.error();
  // Exec steps start in the directory of the scenario the lab was built from.
  WorkloadOptions wo = workload_options(journal.scenario_file);
  wo.run_id = a.run_id;
  FABEMU_TRY(stage_binaries(wo, paths));
  // The launcher's start on the real-time clock, on this machine's monotonic one.
  const auto t0 = Clock::now() + std::chrono::nanoseconds(a.start_at_ns - realtime_ns());
  RunReport part;
  if (auto mode = read_link_mode(paths)) part.link_mode = *mode;
  Observer silent;  // the launching side shows the steps, from every machine's part
  play_workload(*m, paths, wo, t0, part, silent);
  const std::string out = a.out + "/part-" + std::to_string(m->part ? m->part->index : 0) + ".json";
  return write_file(out, run_part_text(part));
}

}  // namespace

Result<std::string> agent(const AgentRequest& a, const LabPaths& base, Observer& observer) {
  FABEMU_TRY(need_root("agent"));
  LabPaths paths = base;
  paths.lab = a.lab;
  if (a.action == "reach") return agent_reach(paths);
  if (a.action == "run") {
    FABEMU_TRY(agent_run(a, paths));
    return std::string();  // the ranks' own output was the answer
  }
  if (a.action != "probe" && a.action != "up")
    return with_failure(
        make_error("agent: unknown action '" + a.action + "'; valid: probe, up, reach, run"),
        Failure::BadInput);
  auto answer =
      a.action == "probe" ? agent_probe(a.up, base, observer) : agent_up(a.up, base, observer);
  if (!answer) return answer.error();
  return json_text(*answer) + "\n";
}

}  // namespace fabemu::session
