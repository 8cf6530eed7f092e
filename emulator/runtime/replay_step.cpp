// Replay steps: placement, memory, the ranks' run and their timelines, the model beside them.
#include "runtime/replay_step.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "model/collective_model.h"
#include "replay/chakra.h"
#include "runtime/host_env.h"
#include "util/files.h"
#include "util/units.h"

namespace fabemu {
namespace {

using replay::OpKind;
using replay::Program;

// MemAvailable of /proc/meminfo, in bytes; none when it cannot be read.
std::optional<uint64_t> available_memory() {
  auto text = read_file("/proc/meminfo");
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  for (std::string key; in >> key;) {
    uint64_t kib = 0;
    in >> kib;
    if (key == "MemAvailable:") return kib * 1024;
    in.ignore(1 << 10, '\n');
  }
  return std::nullopt;
}

// Bytes for people: "128 GiB", "312 MiB".
std::string memory_size(uint64_t bytes) {
  const double mib = static_cast<double>(bytes) / (1 << 20);
  return mib >= 1024 ? printf_string("%.3g GiB", mib / 1024) : printf_string("%.3g MiB", mib);
}

// The step's input files copied into `dir` in the lab's shared directory, where every host
// reads them (a scenario under /tmp is not visible from hosts with a private /tmp): SimAI's
// text, or Chakra's file per rank and the groups file. The copies' paths: file (or prefix),
// groups file.
Result<std::pair<std::string, std::string>> stage_inputs(const ReplayStep& s, int world,
                                                         const std::string& dir) {
  FABEMU_TRY(make_dirs(dir));
  const std::string name = std::filesystem::path(s.path).filename().string();
  std::pair<std::string, std::string> staged{dir + "/" + name, ""};
  if (s.format == "chakra")
    for (int r = 0; r < world; ++r)
      FABEMU_TRY(copy_file(replay::chakra_file(s.path, r), replay::chakra_file(staged.first, r)));
  else
    FABEMU_TRY(copy_file(s.path, staged.first));
  if (!s.comm_groups.empty()) {
    staged.second = dir + "/comm-groups.json";
    FABEMU_TRY(copy_file(s.comm_groups, staged.second));
  }
  return staged;
}

// The switches a host's links lead to: its leaf, and a rail-optimized server's scale-up switch.
std::set<int> adjacent_switches(const Topology& t, int host) {
  std::set<int> out;
  for (int l : t.links_of(host)) out.insert(t.links[l].peer(host).node);
  return out;
}

}  // namespace

Result<std::vector<int>> replay_hosts(const LabModel& m, const ReplayStep& s) {
  const Program& p = *s.program;
  const std::vector<int> hosts = m.topo.hosts();
  std::vector<int> out;
  if (s.placement.empty()) {
    if (p.world > static_cast<int>(hosts.size()))
      return make_error(s.file + " has " + std::to_string(p.world) + " ranks and the lab " +
                            std::to_string(hosts.size()) + " hosts (one host per rank)",
                        EINVAL);
    out.assign(hosts.begin(), hosts.begin() + p.world);
    return out;
  }
  for (const std::string& name : s.placement) {
    const int id = m.topo.find(name);
    if (id < 0 || m.topo.nodes[id].role != Role::Host)
      return make_error("placement: no host named '" + name + "' in the lab", EINVAL);
    out.push_back(id);
  }
  return out;
}

std::string describe_placement(const LabModel& m, const ReplayStep& s) {
  auto hosts = replay_hosts(m, s);
  if (!hosts) return "placement: " + hosts.error().what();
  const Topology& t = m.topo;
  std::string line = "placement: ";
  const size_t shown = std::min<size_t>(hosts->size(), 16);
  for (size_t r = 0; r < shown; ++r)
    line += (r ? ", " : "") + std::to_string(r) + " " + t.nodes[(*hosts)[r]].name;
  if (shown < hosts->size()) line += ", ... (" + std::to_string(hosts->size()) + " ranks)";
  // How many groups of each kind have a switch all their members hang off (a leaf, or a
  // server's scale-up switch), where their traffic need not cross the fabric above it.
  std::map<std::string, std::pair<int, int>> local;  // kind -> (within one switch, all)
  for (const replay::Group& g : s.program->groups) {
    if (g.ranks.size() < 2) continue;
    std::set<int> common = adjacent_switches(t, (*hosts)[g.ranks[0]]);
    for (int r : g.ranks) {
      const std::set<int> mine = adjacent_switches(t, (*hosts)[r]);
      std::erase_if(common, [&](int sw) { return !mine.count(sw); });
    }
    auto& [within, all] = local[g.kind];
    within += !common.empty();
    ++all;
  }
  for (const auto& [kind, n] : local)
    line += "; " + kind + " groups under one switch: " + std::to_string(n.first) + " of " +
            std::to_string(n.second);
  return line;
}

Result<replay::IterationSummary> predict_replay(const LabModel& m, const Topology& topo,
                                                const ReplayStep& s, const std::string& transport) {
  const Program& p = *s.program;
  auto hosts = replay_hosts(m, s);
  if (!hosts) return hosts.error();
  const WireCost cost = wire_cost(transport, m.scenario.fabric.mtu);
  // A collective on one group runs at the same time as the same collective on every group of
  // its kind and size (each tensor-parallel group's allreduce of a layer, each data-parallel
  // group's): the model routes all of them together, phase by phase, so that they share the
  // links they have in common.
  std::map<std::tuple<std::string, size_t, Collective>, Prediction> cache;
  std::optional<Error> failed;
  auto together = [&](const replay::Group& g, Collective c) -> Result<Prediction> {
    const int n = static_cast<int>(g.ranks.size());
    auto pattern = collective_pattern(name_of(c), n);
    if (!pattern) return pattern.error();
    CollectivePattern all = *pattern;
    for (Phase& ph : all.phases) ph.flows.clear();
    std::vector<int> nodes;
    int j = 0;
    for (const replay::Group& other : p.groups) {
      if (other.kind != g.kind || other.ranks.size() != g.ranks.size()) continue;
      for (int r : other.ranks) nodes.push_back((*hosts)[r]);
      for (size_t k = 0; k < pattern->phases.size(); ++k)
        for (const Flow& f : pattern->phases[k].flows)
          all.phases[k].flows.push_back({j * n + f.src, j * n + f.dst, f.share});
      ++j;
    }
    return predict(topo, m.addresses, m.routes, all, cost, nodes);
  };
  auto duration = [&](int, const replay::Op& op) -> double {
    if (op.kind == OpKind::Compute) return static_cast<double>(op.compute_ns);
    const replay::Group& g = p.groups[op.group];
    if (g.ranks.size() < 2) return 0;
    const Collective c = op.kind == OpKind::Collective ? op.collective : Collective::Broadcast;
    const auto key = std::tuple{g.kind, g.ranks.size(), c};
    auto it = cache.find(key);
    if (it == cache.end()) {
      auto pred = together(g, c);
      if (!pred) {
        if (!failed) failed = pred.error();
        return 0;
      }
      it = cache.emplace(key, *pred).first;
    }
    return (it->second.latency_s + it->second.seconds_per_byte * static_cast<double>(op.bytes)) *
           1e9;
  };
  auto timeline = replay::simulate(p, duration);
  if (!timeline) return timeline.error();
  if (failed) return *failed;
  return replay::summarize(p, *timeline);
}

StepResult run_replay_step(const LabModel& m, const LabPaths& paths, size_t index,
                           const ReplayStep& s, const WorkloadOptions& o,
                           std::chrono::seconds timeout) {
  const Program& p = *s.program;
  const std::string transport = resolve_transport(s.transport, m.rdma.rxe);
  StepResult r;
  r.title = "workload[" + std::to_string(index) + "] replay " + s.file + " (" + p.describe() +
            "; gloo, " + transport + ")";
  if (transport == "ibverbs" && !m.rdma.rxe) {
    r.failure = "transport ibverbs needs rxe on the hosts, and this lab has none";
    return r;
  }
  if (m.part) {
    r.failure = "a replay across machines is not supported yet; run it on one machine";
    return r;
  }
  auto hosts = replay_hosts(m, s);
  if (!hosts) {
    r.failure = hosts.error().what();
    return r;
  }
  // Memory is real: every rank's buffers on this machine, before anything starts.
  uint64_t need = 0, largest = 0;
  for (int rank = 0; rank < p.world; ++rank) {
    need += p.memory_bytes(rank);
    largest = std::max(largest, p.memory_bytes(rank));
  }
  if (auto have = available_memory(); have && need > *have) {
    r.failure = "the replay needs " + memory_size(need) + " of buffers (" +
                std::to_string(p.world) + " ranks, up to " + memory_size(largest) +
                " each: every stream's largest collective, input and output) and this machine "
                "has " +
                memory_size(*have) + " available; replay fewer ranks or smaller sizes";
    return r;
  }
  const std::string run_id =
      (o.run_id.empty() ? std::to_string(::getpid()) + "-" + std::to_string(std::time(nullptr))
                        : o.run_id) +
      "-" + std::to_string(index);
  const std::string out = workload_dir(m, paths) + "/replay-" + std::to_string(index);
  auto staged = stage_inputs(s, p.world, out + "-input");
  if (!staged) {
    r.failure = staged.error().what();
    return r;
  }
  std::vector<std::string> argv = {o.collective,
                                   "--replay",
                                   staged->first,
                                   "--format",
                                   s.format,
                                   "--iterations",
                                   std::to_string(s.iterations),
                                   "--transport",
                                   transport,
                                   "--run-id",
                                   run_id,
                                   "--replay-out",
                                   out,
                                   "--timeout",
                                   std::to_string(timeout.count())};
  if (!staged->second.empty()) argv.insert(argv.end(), {"--comm-groups", staged->second});
  std::vector<NodeContext> nodes;
  for (int rank = 0; rank < p.world; ++rank) {
    NodeContext c = node_context(m, paths, (*hosts)[rank]);
    for (auto& [k, v] : c.env) {
      if (k == "RANK") v = std::to_string(rank);
      if (k == "WORLD_SIZE") v = std::to_string(p.world);
    }
    nodes.push_back(std::move(c));
  }
  RunOptions run;
  run.timeout = timeout;
  run.echo = o.echo;
  const auto start = std::chrono::steady_clock::now();
  auto exits = run_in_nodes(nodes, argv, run);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!exits) {
    r.failure = exits.error().what();
    return r;
  }
  r.failure = describe_exits(*exits, timeout);
  ReplayResult res;
  res.program = s.program;
  res.time_scale = m.time_scale.factor;
  for (int h : *hosts) res.placement.push_back(m.topo.nodes[h].name);
  std::vector<replay::RankRecord> records;
  for (int rank = 0; rank < p.world && r.failure.empty(); ++rank) {
    const std::string file = out + "." + std::to_string(rank) + ".json";
    auto text = read_file(file);
    auto rec =
        text ? replay::parse_record_json(*text, file) : Result<replay::RankRecord>(text.error());
    if (!rec) {
      r.failure = rec.error().what();
      break;
    }
    res.checked += rec->checked;
    res.wrong += rec->wrong;
    records.push_back(std::move(*rec));
  }
  if (r.failure.empty()) {
    for (size_t k = 0; k < static_cast<size_t>(s.iterations); ++k) {
      replay::Timeline t = replay::iteration_timeline(records, k);
      res.iterations.push_back(replay::summarize(p, t));
      if (k == 0) res.first = std::move(t);
    }
    auto model = predict_replay(m, live_topology(m, paths), s, transport);
    if (model)
      res.model = *model;
    else
      res.model_error = model.error().what();
  }
  r.ok = r.failure.empty() && res.wrong == 0;
  if (r.failure.empty() && res.wrong) r.failure = std::to_string(res.wrong) + " wrong elements";
  r.replay = std::move(res);
  return r;
}

}  // namespace fabemu
