// `exec`: a program in one node (replacing this process), or in every host at once.
#include <cerrno>

#include "runtime/host_env.h"
#include "runtime/spawn.h"
#include "session/across.h"
#include "session/session.h"

namespace fabemu::session {
namespace {

// A command that cannot be started exits as a shell's would: 127 not found, 126 not executable.
int exec_status(const Error& e) {
  const int err = errno_of(e);
  return err == ENOENT ? 127 : err == EACCES || err == ENOEXEC ? 126 : kExitFailed;
}

// clock: fabric on a machine without what it needs is unsupported here, as `up` says it.
Error clock_error(const Error& e) {
  return with_failure(make_error("exec: " + e.message),
                      errno_of(e) == EOPNOTSUPP ? Failure::Unsupported : Failure::Failed);
}

}  // namespace

Result<ExecOutcome> exec(const ExecRequest& req, const LabPaths& base) {
  if (!req.on.empty()) return exec_across(req, base);
  FABEMU_TRY(need_root("exec"));
  std::optional<HostClock> clock;
  if (req.clock == "fabric") clock = HostClock::Fabric;
  if (req.clock == "wall") clock = HostClock::Wall;
  const auto colon = req.target.find(':');
  auto bad = [](const std::string& m) { return with_failure(make_error(m), Failure::BadInput); };
  if (req.keep_output && !req.all)
    return bad("exec: --json goes with --all (one node's command writes its own output)");
  if (req.all == (colon != std::string::npos))
    return bad("exec: write LAB:NODE for one node, or LAB --all for every host (got '" +
               req.target + "')");
  LabPaths paths = base;
  paths.lab = req.target.substr(0, colon);
  auto model = open_lab(paths);
  if (!model) return model.error();
  ExecOutcome out;
  out.lab = paths.lab;
  if (!req.all) {
    const std::string node = req.target.substr(colon + 1);
    const int id = model->topo.find(node);
    if (id < 0) return bad("exec: lab " + paths.lab + " has no node named '" + node + "'");
    if (!local_node(*model, id))
      return make_error("exec: " + node + " of lab " + paths.lab + " is on machine " +
                        model->part->machines[model->part->placement.machine_of[id]] +
                        "; from the launching side, `fabemu exec " + req.target + " --on slurm`");
    auto context = program_context(*model, paths, id, clock);
    if (!context) return clock_error(context.error());
    Error e = exec_in_node(*context, req.argv);  // returns only when the exec failed
    out.status = exec_status(e);
    out.exec_error = std::move(e);
    return out;
  }
  std::vector<NodeContext> nodes;
  for (int h : model->topo.hosts()) {
    if (!local_node(*model, h)) continue;
    auto context = program_context(*model, paths, h, clock);
    if (!context) return clock_error(context.error());
    nodes.push_back(std::move(*context));
  }
  RunOptions run;
  run.tag = !req.no_tag && !req.keep_output;
  run.echo = !req.keep_output;
  run.keep = req.keep_output;
  auto exits = run_in_nodes(nodes, req.argv, run);
  if (!exits) {
    // The message names the host and the errno's words.
    out.status = exec_status(exits.error());
    out.exec_error = exits.error();
    return out;
  }
  out.hosts = std::move(*exits);
  for (const NodeExit& e : out.hosts)
    if (e.status != 0 && out.status == 0) out.status = e.status;
  return out;
}

Json ExecOutcome::to_json() const {
  Json list = Json::array();
  for (const NodeExit& e : hosts)
    list.push_back(
        {{"host", e.node}, {"status", e.status}, {"timed_out", e.timed_out}, {"output", e.output}});
  return {{"schema", kSchemaVersion}, {"command", "exec"}, {"lab", lab}, {"hosts", list}};
}

}  // namespace fabemu::session
