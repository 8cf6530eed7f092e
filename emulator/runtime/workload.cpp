// Workload steps: argv building (pure) and running them in the lab's hosts.
#include "runtime/workload.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "apply/link_control.h"
#include "apply/reroute.h"
#include "model/collective_model.h"
#include "runtime/host_env.h"
#include "runtime/incast.h"
#include "runtime/replay_step.h"
#include "runtime/spawn.h"
#include "util/files.h"
#include "util/json.h"

namespace fabemu {
namespace {

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

Topology live_topology(const LabModel& m, const LabPaths& paths) {
  Topology t = m.topo;
  auto lm = read_link_model(paths, m);
  if (!lm) return t;
  for (const DirectionState& d : lm->dirs) {
    Link& l = t.links[d.dir.link];
    // A lab across machines: another machine shapes this direction, as the scenario says.
    if (!local_node(m, d.dir.b_to_a ? l.b.node : l.a.node)) continue;
    LinkShape shape = d.shaped ? d.shape : LinkShape{};
    // Without fq no delay is added, whatever the shape says: predict what the links do.
    if (!lm->mode.fq) shape.delay_ns = shape.jitter_ns = 0;
    (d.dir.b_to_a ? l.b_to_a : l.a_to_b) = shape;
  }
  return t;
}

std::string describe_exits(const std::vector<NodeExit>& exits, std::chrono::seconds timeout) {
  std::vector<std::string> bad;
  bool timed_out = false;
  for (const auto& e : exits) {
    timed_out |= e.timed_out;
    if (e.status != 0) bad.push_back(e.node + " exited with " + std::to_string(e.status));
  }
  if (timed_out)
    return "timed out after " + std::to_string(timeout.count()) + " s (stopped every process)";
  if (bad.size() > 4) bad.resize(4), bad.push_back("...");
  return join(bad, ", ");
}

WorkloadOptions workload_options(const std::string& scenario_file) {
  WorkloadOptions o;
  o.fabemu = self_exe();
  const std::string dir = o.fabemu.substr(0, o.fabemu.rfind('/') + 1);
  o.collective = dir + "fabemu-collective";
  if (!path_exists(o.collective) && path_exists(dir + "collective/fabemu-collective"))
    o.collective = dir + "collective/fabemu-collective";
  const size_t slash = scenario_file.rfind('/');
  o.scenario_dir = slash == std::string::npos ? "." : scenario_file.substr(0, slash);
  if (o.scenario_dir.empty()) o.scenario_dir = "/";
  if (char* real = ::realpath(o.scenario_dir.c_str(), nullptr)) {
    o.scenario_dir = real;
    std::free(real);
  }
  return o;
}

Result<void> stage_binaries(WorkloadOptions& o, const LabPaths& paths) {
  namespace fs = std::filesystem;
  const fs::path bin = fs::path(paths.shared_dir()) / "bin";
  FABEMU_TRY(make_dirs(bin.string()));
  std::error_code ec;
  for (std::string* path : {&o.fabemu, &o.collective}) {
    const fs::path to = bin / fs::path(*path).filename();
    FABEMU_TRY(copy_file(*path, to.string()));
    fs::permissions(to, fs::perms(0755), ec);
    *path = to.string();
  }
  return ok();
}

std::string resolve_transport(const std::string& transport, bool lab_has_rdma) {
  if (transport == "auto") return lab_has_rdma ? "ibverbs" : "tcp";
  return transport;
}

std::vector<std::string> collective_argv(const WorkloadOptions& o, const CollectiveStep& c,
                                         const std::string& library, const std::string& transport,
                                         const std::string& run_id, const std::string& json_out,
                                         const std::string& predict, int timeout_s) {
  std::vector<std::string> sizes;
  for (uint64_t s : c.sizes) sizes.push_back(std::to_string(s));
  std::vector<std::string> argv = {
      o.collective,     "--library",    library == "gloo" ? "gloo" : "mpi",
      "--collective",   c.collective,   "--sizes",
      join(sizes, ","), "--iterations", std::to_string(c.iterations),
      "--json-out",     json_out};
  if (library == "gloo") argv.insert(argv.end(), {"--transport", transport, "--run-id", run_id});
  if (library == "gloo" && c.qps_per_peer > 1)
    argv.insert(argv.end(), {"--qps-per-peer", std::to_string(c.qps_per_peer)});
  if (!predict.empty()) argv.insert(argv.end(), {"--predict", predict});
  // Each connect and transfer wait; the step's own deadline bounds the whole run.
  argv.insert(argv.end(), {"--timeout", std::to_string(timeout_s)});
  return argv;
}

std::vector<std::string> mpirun_argv(const WorkloadOptions& o, const LabPaths& lab,
                                     const std::vector<std::string>& hosts,
                                     const std::string& library, const std::string& transport) {
  std::vector<std::string> slots;
  for (const auto& h : hosts) slots.push_back(h + ":1");
  std::vector<std::string> argv = {
      "mpirun", "--allow-run-as-root", "-np", std::to_string(hosts.size()), "--host",
      join(slots, ","),
      // No sshd: mpirun starts a daemon per host through this agent, which enters the host.
      "--mca", "plm_rsh_agent", o.fabemu + " rsh --run-dir " + lab.run_root + " " + lab.lab,
      "--mca", "plm_rsh_no_tree_spawn", "1",
      // Every daemon talks to mpirun itself (the default tree between daemons finds no path).
      "--mca", "routed", "direct"};
  if (library == "ucx" || transport == "ibverbs") {
    // UCX over rxe (RC verbs) or TCP; never shared memory: ranks are on different hosts even
    // though they share the machine's /dev/shm.
    argv.insert(argv.end(), {"--mca", "pml", "ucx", "--mca", "btl", "self", "-x",
                             transport == "ibverbs" ? "UCX_TLS=rc,ud,self" : "UCX_TLS=tcp,self"});
    if (transport != "ibverbs") argv.insert(argv.end(), {"-x", "UCX_NET_DEVICES=eth0"});
  } else {
    argv.insert(argv.end(), {"--mca", "pml", "ob1", "--mca", "btl", "tcp,self"});
  }
  return argv;
}

std::string live_predictions(const LabModel& m, const LabPaths& paths,
                             const std::string& transport) {
  return predictions_json(live_topology(m, paths), m.addresses, m.routes, transport,
                          m.scenario.fabric.mtu);
}

namespace {

// A links step: as `fabemu link set` on every link selected, with the maps opened once.
StepResult run_links_step(const LabModel& m, const LabPaths& paths, size_t index,
                          const LinksStep& ls) {
  StepResult r;
  r.title = "workload[" + std::to_string(index) + "] links " + ls.select + ": " + ls.set.str();
  const auto start = std::chrono::steady_clock::now();
  auto maps = open_link_model(paths);
  if (!maps) {
    r.failure = maps.error().what();
    return r;
  }
  auto dp = kernel_datapath(m, paths, &*maps);
  size_t directions = 0;
  for (const Link& l : m.topo.links) {
    const std::string name = link_name(m.topo, l);
    if (ls.select != "all" && ls.select != l.cls && ls.select != name) continue;
    auto changed = change_links(paths, m, name, ls.set, {}, *dp);
    if (!changed) {
      r.failure = changed.error().what();
      return r;
    }
    directions += changed->size();
  }
  // One direction of one link ("a>b"): the link named by its own rule.
  if (directions == 0 && ls.select.find('>') != std::string::npos) {
    auto changed = change_links(paths, m, ls.select, ls.set, {}, *dp);
    if (!changed) {
      r.failure = changed.error().what();
      return r;
    }
    directions = changed->size();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.note = std::to_string(directions) + " directions changed";
  r.ok = true;
  return r;
}

// A load_balance step: every balanced switch's groups rewritten with the step's modes, over the
// routes as the lab's failed links have moved them.
StepResult run_load_balance_step(const LabModel& m, const LabPaths& paths, size_t index,
                                 const LoadBalanceStep& step) {
  StepResult r;
  FabricSpec modes = m.scenario.fabric;
  modes.load_balance = step.lb;
  modes.load_balance_overrides = step.overrides;
  r.title =
      "workload[" + std::to_string(index) + "] load_balance: " + load_balance_name(step.lb) +
      (step.overrides.empty() ? ""
                              : " (and " + std::to_string(step.overrides.size()) + " overrides)");
  const auto start = std::chrono::steady_clock::now();
  auto fail = [&](const Error& e) {
    r.failure = e.what();
    return r;
  };
  auto rerouter = Rerouter::open(m, paths);
  if (!rerouter) return fail(rerouter.error());
  auto routes = plan_routes(m.topo, m.addresses, rerouter->failed());
  if (!routes) return fail(routes.error());
  auto maps = open_link_model(paths);
  if (!maps) return fail(maps.error());
  size_t switches = 0, groups = 0;
  for (const BalanceSwitch& b : balance_switches(m, paths, &*routes, &modes)) {
    if (auto done = maps->rebalance(b); !done) return fail(done.error());
    switches += !b.groups.empty();
    groups += b.groups.size();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.note = std::to_string(groups) + " groups on " + std::to_string(switches) + " switches";
  r.ok = true;
  return r;
}

// What a collective or exec step runs, and in which hosts.
struct StepCommand {
  std::vector<NodeContext> nodes;
  std::vector<std::string> argv;
  RunOptions run;
};

// A collective: every local host's rank (Gloo), or mpirun in the first host. Fails through
// `r.failure`.
std::optional<StepCommand> plan_collective(const LabModel& m, const LabPaths& paths, size_t index,
                                           const CollectiveStep& c, const WorkloadOptions& o,
                                           std::chrono::seconds timeout,
                                           const std::vector<NodeContext>& all, StepResult& r) {
  const std::string transport = resolve_transport(c.transport, m.rdma.rxe);
  r.title = "workload[" + std::to_string(index) + "] " + c.collective + " (" + c.library + ", " +
            transport + ")";
  if (transport == "ibverbs" && !m.rdma.rxe) {
    r.failure = "transport ibverbs needs rxe on the hosts, and this lab has none (`fabemu status " +
                paths.lab + "` says why)";
    return std::nullopt;
  }
  // A run id no earlier run of this lab used: Gloo's file store never forgets keys. Across
  // machines the launcher gives every machine the same.
  const std::string run_id =
      (o.run_id.empty() ? std::to_string(::getpid()) + "-" + std::to_string(std::time(nullptr))
                        : o.run_id) +
      "-" + std::to_string(index);
  // Rank 0 writes the results where every machine (and the launcher) sees them; each
  // machine's ranks read its own copy of the predictions.
  r.json_lines = workload_dir(m, paths) + "/workload-" + std::to_string(index) + ".jsonl";
  const std::string predict = paths.shared_dir() + "/predict-" + transport + ".json";
  if (auto wr = write_file(predict, live_predictions(m, paths, transport)); !wr) {
    r.failure = wr.error().what();
    return std::nullopt;
  }
  StepCommand cmd;
  cmd.argv = collective_argv(o, c, c.library, transport, run_id, r.json_lines, predict,
                             static_cast<int>(timeout.count()));
  cmd.run.tag = false;  // rank 0 prints the table; the others speak only to report errors
  if (c.library == "gloo") {
    cmd.nodes = all;
    return cmd;
  }
  if (m.part) {
    r.failure = "library " + c.library +
                " across machines is not supported yet (mpirun's daemons would have to reach "
                "hosts on other machines); use library: gloo";
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (int h : m.topo.hosts()) names.push_back(m.topo.nodes[h].name);
  auto launcher = mpirun_argv(o, paths, names, c.library, transport);
  cmd.argv.insert(cmd.argv.begin(), launcher.begin(), launcher.end());
  cmd.nodes = {all.front()};
  return cmd;
}

// A user's program in the hosts it names, on the clock hosts.clock says, from the scenario
// file's directory. Fails through `r.failure`.
std::optional<StepCommand> plan_exec(const LabModel& m, const LabPaths& paths, size_t index,
                                     const ExecStep& e, const WorkloadOptions& o, StepResult& r) {
  r.title = "workload[" + std::to_string(index) + "] exec " + join(e.command, " ");
  std::vector<int> ids;
  if (e.hosts == "all") {
    ids = m.topo.hosts();
  } else {
    for (size_t at = 0; at <= e.hosts.size();) {
      size_t comma = std::min(e.hosts.find(',', at), e.hosts.size());
      const std::string name = e.hosts.substr(at, comma - at);
      const int id = m.topo.find(name);
      if (id < 0 || m.topo.nodes[id].role != Role::Host) {
        r.failure = "no host named " + name + " in lab " + paths.lab;
        return std::nullopt;
      }
      ids.push_back(id);
      at = comma + 1;
    }
  }
  StepCommand cmd;
  for (int id : ids) {
    if (!local_node(m, id)) continue;
    auto context = program_context(m, paths, id);
    if (!context) {
      r.failure = context.error().message;
      return std::nullopt;
    }
    cmd.nodes.push_back(std::move(*context));
  }
  cmd.argv = e.command;
  cmd.run.cwd = o.scenario_dir;
  return cmd;
}

}  // namespace

StepResult run_step(const LabModel& m, const LabPaths& paths, size_t index,
                    const WorkloadOptions& o) {
  const WorkloadStep& w = m.scenario.workload.at(index);
  // A timeout the scenario gives is the real fabric's (at least 1 s of wall clock: the loader
  // checks a fixed time scale, not `auto`'s); the default is wall clock.
  const uint64_t wall_s =
      w.timeout_ns ? std::max<uint64_t>(1, m.time_scale.wall_ns(*w.timeout_ns) / 1'000'000'000ULL)
                   : 0;
  const auto timeout = w.timeout_ns ? std::chrono::seconds(wall_s) : o.default_timeout;
  if (const auto* in = std::get_if<IncastStep>(&w.step))
    return run_incast(m, paths, index, *in, timeout);
  if (const auto* ls = std::get_if<LinksStep>(&w.step)) return run_links_step(m, paths, index, *ls);
  if (const auto* lb = std::get_if<LoadBalanceStep>(&w.step))
    return run_load_balance_step(m, paths, index, *lb);
  if (const auto* rp = std::get_if<ReplayStep>(&w.step))
    return run_replay_step(m, paths, index, *rp, o, timeout);
  // A lab across machines: this machine runs the ranks of its own hosts.
  std::vector<NodeContext> all;
  for (int h : m.topo.hosts())
    if (local_node(m, h)) all.push_back(node_context(m, paths, h));
  StepResult r;
  const auto start = std::chrono::steady_clock::now();
  const auto* c = std::get_if<CollectiveStep>(&w.step);
  std::optional<StepCommand> cmd = c ? plan_collective(m, paths, index, *c, o, timeout, all, r)
                                     : plan_exec(m, paths, index, std::get<ExecStep>(w.step), o, r);
  if (!cmd) return r;
  cmd->run.timeout = timeout;
  cmd->run.echo = o.echo;
  auto exits = run_in_nodes(cmd->nodes, cmd->argv, cmd->run);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!exits) {
    r.failure = exits.error().what();
    return r;
  }
  r.failure = describe_exits(*exits, timeout);
  r.ok = r.failure.empty();
  if (r.ok && !r.json_lines.empty())
    if (auto text = read_file(r.json_lines)) r.note = ratio_note(*text);
  return r;
}

}  // namespace fabemu
