// `--on slurm`: a lab across the machines of an allocation. The launcher (runtime/launcher.h)
// starts `fabemu agent` (or the machine's own `fabemu down/status/exec/link`) on every machine;
// this side agrees the pool and time scale, keeps the lab's record, and merges what the
// machines answer into the output of the one-machine commands.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "plan/partition.h"
#include "report/run_part.h"
#include "runtime/cluster.h"
#include "runtime/launcher.h"
#include "scenario/loader.h"
#include "util/files.h"
#include "util/json.h"
#include "util/process.h"
#include "util/units.h"

namespace fabemu::cli {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// This binary with `words` on a machine (the same path on every machine: a shared or the same
// installation), with our run root.
std::vector<std::string> fabemu_argv(const LabPaths& base, std::vector<std::string> words) {
  std::vector<std::string> argv = {self_exe(), "--run-dir", base.run_root};
  argv.insert(argv.end(), words.begin(), words.end());
  return argv;
}

std::string comma_list(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ",") + w;
  return out;
}

// What a machine said when it failed: its error lines, without the launcher's own chatter.
std::string failure_text(const Launcher::Reply& r) {
  std::istringstream lines(r.err);
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.rfind("srun: ", 0) == 0) continue;
    if (line.rfind("fabemu: ", 0) == 0) line.erase(0, 8);
    out += (out.empty() ? "" : "; ") + line;
  }
  if (r.status < 0) return "no answer before the deadline" + (out.empty() ? "" : ": " + out);
  if (out.empty()) return "exited with status " + std::to_string(r.status);
  return out;
}

// A round: the same command on every machine. Replies whose status is not in `ok` are printed
// as "machine: error"; the worst exit code among them is returned (0: all fine).
struct Round {
  std::vector<Launcher::Reply> replies;
  std::vector<Json> json;  // each reply's standard output, when it is a JSON object
  int code = kExitOk;
};
Round run_round(Launcher& l, const std::vector<std::string>& machines,
                const std::vector<std::string>& argv, std::chrono::seconds timeout,
                std::initializer_list<int> ok = {kExitOk}) {
  Round r;
  auto replies = l.run_each(machines, argv, timeout);
  if (!replies) {
    print_error(replies.error().what());
    r.code = kExitFailed;
    return r;
  }
  r.replies = std::move(*replies);
  // The same failure on several machines (a scenario this kernel refuses) is said once.
  std::vector<std::pair<std::string, std::vector<std::string>>> failures;
  for (const Launcher::Reply& reply : r.replies) {
    r.json.push_back(Json::parse(reply.out, nullptr, /*allow_exceptions=*/false));
    if (std::find(ok.begin(), ok.end(), reply.status) != ok.end()) continue;
    const std::string text = failure_text(reply);
    auto it = std::find_if(failures.begin(), failures.end(),
                           [&](const auto& f) { return f.first == text; });
    if (it == failures.end()) it = failures.insert(failures.end(), {text, {}});
    it->second.push_back(reply.machine);
    const int code = reply.status == kExitBadInput || reply.status == kExitUnsupported
                         ? reply.status
                         : kExitFailed;
    r.code = std::max(r.code, code);
  }
  for (const auto& [text, on] : failures)
    print_error((on.size() == 1 ? "machine " : "machines ") + comma_list(on) + ": " + text);
  return r;
}

Result<std::unique_ptr<Launcher>> launcher_for(const std::string& on) {
  auto l = make_launcher(on);
  if (!l) print_error(l.error().what());
  return l;
}

// The record of a lab spread from here, or an exit code (printed).
std::variant<ClusterRecord, int> record_of(const std::string& lab) {
  auto r = read_cluster_record(lab);
  if (!r) {
    print_error(r.error().what());
    return errno_of(r.error()) == ENOENT ? kExitNoLab : kExitFailed;
  }
  return *r;
}

std::string realpath_of(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return path;
  std::string out = real;
  std::free(real);
  return out;
}

int64_t realtime_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// Every machine's part of the lab taken down; the record and shared files go when all went.
int take_down(Launcher& l, const ClusterRecord& r, const LabPaths& base) {
  const auto start = Clock::now();
  Round down =
      run_round(l, r.machines, fabemu_argv(base, {"down", r.lab}), 600s, {kExitOk, kExitNoLab});
  if (down.code != kExitOk) {
    print_error("lab " + r.lab + " is not down on every machine; `fabemu down " + r.lab + " --on " +
                r.launcher + "` again takes down what is left");
    return down.code;
  }
  remove_cluster_record(r.lab);
  std::error_code ec;
  std::filesystem::remove_all(r.shared_dir + "/" + r.lab, ec);
  std::printf("lab %s down on %zu machines in %.2f s\n", r.lab.c_str(), r.machines.size(),
              seconds_since(start));
  return kExitOk;
}

// The lab built across the allocation: on success the record, the launcher and the model.
struct ClusterLab {
  ClusterRecord record;
  std::unique_ptr<Launcher> launcher;
  LabModel model;
};

// What the machines' probes agreed on: a pool free on every one, the largest time scale any
// machine's share of the fabric needs, and why.
struct Agreement {
  int pool = 0;
  double factor = 1;
  std::string why;
};

// The probe round's replies folded into an Agreement; an error code when a machine did not
// answer, already has the lab, or no pool is free on all of them.
int agree(const Round& asked, const std::vector<std::string>& machines, const std::string& lab,
          Agreement& out) {
  std::set<int> pools;
  for (int p = 0; p < kMaxLabPools; ++p) pools.insert(p);
  for (size_t k = 0; k < machines.size(); ++k) {
    const Json& j = asked.json[k];
    if (!j.is_object()) {
      print_error("machine " + machines[k] + ": no answer from its agent (" +
                  failure_text(asked.replies[k]) + ")");
      return kExitFailed;
    }
    if (j.value("lab_exists", false)) {
      print_error("machine " + machines[k] + " already has a lab named " + lab + " (`fabemu down " +
                  lab + "` there, or pick another --lab)");
      return kExitFailed;
    }
    std::set<int> mine;
    for (const Json& p : j.value("free_pools", Json::array())) mine.insert(p.get<int>());
    std::erase_if(pools, [&](int p) { return !mine.count(p); });
    if (const double f = j.value("time_scale", 1.0); k == 0 || f > out.factor) {
      out.factor = f;
      out.why = j.value("time_scale_why", "");
      if (machines.size() > 1 && out.why.rfind("auto", 0) == 0) out.why += " (" + machines[k] + ")";
    }
  }
  if (pools.empty()) {
    print_error("no address pool is free on every machine; take down a lab on them first");
    return kExitFailed;
  }
  out.pool = *pools.begin();
  return kExitOk;
}

// The lab as built: its size, each machine's part and the machines' notes (each once).
void print_built(const ClusterLab& c, const Round& built, double seconds) {
  const Topology& t = c.model.topo;
  const std::vector<std::string>& machines = c.record.machines;
  int routes = 0;
  for (const Json& j : built.json) routes += j.value("routes", 0);
  const auto& of = c.model.part->placement.machine_of;
  const auto cut = std::count_if(t.links.begin(), t.links.end(),
                                 [&](const Link& l) { return of[l.a.node] != of[l.b.node]; });
  std::printf(
      "lab %s up on %zu machines (%s) in %.2f s: %d hosts, %zu switches, %zu links (%td between "
      "machines, as VXLAN tunnels), %d routes (addresses %s)\n",
      c.record.lab.c_str(), machines.size(), c.record.launcher.c_str(), seconds, t.host_count(),
      t.switches().size(), t.links.size(), cut, routes, c.model.addresses.pool.str().c_str());
  std::vector<std::string> notes;
  std::set<std::string> seen;
  for (size_t k = 0; k < machines.size(); ++k) {
    const Json& j = built.json[k];
    std::printf("  %-10s %4d hosts %4d switches %4d tunnels, up in %.2f s: %s\n",
                machines[k].c_str(), j.value("hosts", 0), j.value("switches", 0),
                j.value("tunnels", 0), j.value("seconds", 0.0),
                describe_nodes(t, c.model.part->placement.nodes_of(static_cast<int>(k))).c_str());
    for (const Json& n : j.value("notes", Json::array()))
      if (seen.insert(n.get<std::string>()).second)
        notes.push_back((k ? machines[k] + ": " : "") + n.get<std::string>());
  }
  for (const auto& n : notes) std::printf("  note: %s\n", n.c_str());
}

// Before any machine is asked: the scenario, the lab's name, the launcher and its machines, a
// partition over them, no lab of that name already up. Sets `c.launcher`, `lab` and `machines`.
int check_request(const UpArgs& args, ClusterLab& c, std::string& lab,
                  std::vector<std::string>& machines) {
  auto sc = load_scenario_file(args.scenario);
  if (!sc) {
    print_error(sc.error().what());
    return kExitBadInput;
  }
  lab = args.lab.empty() ? sc->name : args.lab;
  if (!is_valid_lab_name(lab)) {
    print_error("--lab: '" + lab + "' is not a lab name: 1-12 of a-z, 0-9 and '-'");
    return kExitBadInput;
  }
  if (args.dry_run) {
    print_error("--dry-run with --on: use `fabemu up --dry-run --machines M` for the partition");
    return kExitBadInput;
  }
  auto launcher = launcher_for(args.on);
  if (!launcher) return errno_of(launcher.error()) == EINVAL ? kExitBadInput : kExitFailed;
  c.launcher = std::move(*launcher);
  auto listed = c.launcher->machines();
  if (!listed) {
    print_error(listed.error().what());
    return kExitFailed;
  }
  machines = std::move(*listed);
  auto model = build_model(*sc, 0);
  if (!model) {
    print_error(model.error().what());
    return kExitBadInput;
  }
  if (auto p = partition(*model, static_cast<int>(machines.size())); !p) {
    print_error(sc->file + ": " + p.error().what());
    return kExitBadInput;
  }
  if (auto existing = read_cluster_record(lab)) {
    print_error("lab " + lab + " is already up on " + comma_list(existing->machines) +
                " (`fabemu down " + lab + " --on " + existing->launcher + "` first, or --lab)");
    return kExitFailed;
  }
  return kExitOk;
}

int build_across(const UpArgs& args, const LabPaths& base, ClusterLab& c) {
  const auto start = Clock::now();
  // The scenario checked here first: a bad file is refused before any machine is asked.
  std::string lab;
  std::vector<std::string> machines;
  if (const int code = check_request(args, c, lab, machines); code != kExitOk) return code;

  // Every machine checks its part and says which pools it has free and what time scale its
  // share of the fabric needs; they must agree before anything is built.
  const std::string scenario = realpath_of(args.scenario);
  const std::string shared = cluster_shared_dir();
  std::vector<std::string> common = {
      scenario, "--lab", lab, "--machines", comma_list(machines), "--shared-dir", shared};
  if (args.accept_degraded) common.push_back("--accept-degraded");
  std::vector<std::string> probe = {"agent", "probe"};
  probe.insert(probe.end(), common.begin(), common.end());
  if (!args.time_scale.empty()) probe.insert(probe.end(), {"--time-scale", args.time_scale});
  Round asked = run_round(*c.launcher, machines, fabemu_argv(base, probe), 900s);
  if (asked.code != kExitOk) return asked.code;
  Agreement agreed;
  if (const int code = agree(asked, machines, lab, agreed); code != kExitOk) return code;

  // The record first: whatever happens from here, `down --on` finds the machines.
  c.record = ClusterRecord{lab,    c.launcher->name(), machines,  agreed.pool, scenario,
                           shared, agreed.factor,      agreed.why};
  if (auto w = write_cluster_record(c.record); !w) {
    print_error(w.error().what());
    return kExitFailed;
  }
  std::vector<std::string> up = {"agent", "up"};
  up.insert(up.end(), common.begin(), common.end());
  up.insert(up.end(), {"--pool", std::to_string(c.record.pool), "--time-scale",
                       printf_string("%.17g", agreed.factor)});
  Round built = run_round(*c.launcher, machines, fabemu_argv(base, up), 3600s);
  if (built.code != kExitOk) {
    print_error("lab " + lab + " did not come up on every machine; taking it down");
    (void)take_down(*c.launcher, c.record, base);
    return built.code;
  }
  auto whole = cluster_model(c.record);
  if (!whole) {
    print_error(whole.error().what());
    return kExitFailed;
  }
  c.model = std::move(*whole);
  print_built(c, built, seconds_since(start));
  return kExitOk;
}

}  // namespace

int cluster_up(const UpArgs& args, const LabPaths& base) {
  ClusterLab c;
  const int code = build_across(args, base, c);
  if (code != kExitOk) return code;
  const auto hosts = c.model.topo.hosts();
  const std::string on = " --on " + c.record.launcher;
  std::printf("  try: fabemu exec %s:%s%s -- ping -c3 %s\n", c.record.lab.c_str(),
              c.model.topo.nodes[hosts.front()].name.c_str(), on.c_str(),
              c.model.topo.nodes[hosts.back()].name.c_str());
  std::printf("       fabemu status %s%s; fabemu down %s%s\n", c.record.lab.c_str(), on.c_str(),
              c.record.lab.c_str(), on.c_str());
  return kExitOk;
}

int cluster_down(const std::vector<std::string>& labs, const std::string& on,
                 const LabPaths& base) {
  if (labs.empty()) {
    print_error("down --on: name the labs");
    return kExitBadInput;
  }
  auto launcher = launcher_for(on);
  if (!launcher) return errno_of(launcher.error()) == EINVAL ? kExitBadInput : kExitFailed;
  int code = kExitOk;
  for (const std::string& lab : labs) {
    auto r = read_cluster_record(lab);
    if (!r) {
      // No record (the state directory lost): every machine of the allocation is asked.
      auto machines = (*launcher)->machines();
      if (!machines) {
        print_error(machines.error().what());
        return kExitFailed;
      }
      r = ClusterRecord{lab, on, *machines, -1, "", cluster_shared_dir(), 1, ""};
    }
    code = std::max(code, take_down(**launcher, *r, base));
  }
  return code;
}

int cluster_status(const std::string& lab, bool json, const StatusView& view, const std::string& on,
                   const LabPaths& base) {
  auto rec = record_of(lab);
  if (auto* code = std::get_if<int>(&rec)) return *code;
  const ClusterRecord& r = std::get<ClusterRecord>(rec);
  auto launcher = launcher_for(on.empty() ? r.launcher : on);
  if (!launcher) return kExitFailed;
  Round asked = run_round(**launcher, r.machines, fabemu_argv(base, {"status", lab, "--json"}),
                          120s, {kExitOk, kExitFailed});
  if (asked.code != kExitOk) return asked.code;
  std::vector<Json> parts;
  for (size_t k = 0; k < r.machines.size(); ++k) {
    if (!asked.json[k].is_object()) {
      print_error("machine " + r.machines[k] + ": " + failure_text(asked.replies[k]));
      return kExitFailed;
    }
    parts.push_back(std::move(asked.json[k]));
  }
  const Json merged = session::merge_status(parts);
  show_status(merged, json, view);
  return merged.value("state", "") == "up" ? kExitOk : kExitFailed;
}

int cluster_exec(const std::string& target, bool all, bool no_tag,
                 const std::vector<std::string>& argv, const std::string& clock,
                 const std::string& on, const LabPaths& base) {
  const auto colon = target.find(':');
  if (all == (colon != std::string::npos)) {
    print_error("exec: write LAB:NODE for one node, or LAB --all for every host (got '" + target +
                "')");
    return kExitBadInput;
  }
  auto rec = record_of(target.substr(0, colon));
  if (auto* code = std::get_if<int>(&rec)) return *code;
  const ClusterRecord& r = std::get<ClusterRecord>(rec);
  auto launcher = launcher_for(on.empty() ? r.launcher : on);
  if (!launcher) return kExitFailed;
  std::vector<std::string> words = {"exec", target};
  if (all) words.push_back("--all");
  if (no_tag) words.push_back("--no-tag");
  if (!clock.empty()) words.insert(words.end(), {"--clock", clock});
  words.push_back("--");
  words.insert(words.end(), argv.begin(), argv.end());
  if (all) {
    // Every machine runs its own hosts' processes, ranks numbered over the whole lab.
    auto replies = (*launcher)->run_each(r.machines, fabemu_argv(base, words), 24h,
                                         Launcher::Output::Attached);
    if (!replies) {
      print_error(replies.error().what());
      return kExitFailed;
    }
    int code = kExitOk;
    for (const auto& reply : *replies) code = std::max(code, reply.status < 0 ? 1 : reply.status);
    return code;
  }
  auto m = cluster_model(r);
  if (!m) {
    print_error(m.error().what());
    return kExitFailed;
  }
  const int id = m->topo.find(target.substr(colon + 1));
  if (id < 0) {
    print_error("exec: lab " + r.lab + " has no node named '" + target.substr(colon + 1) + "'");
    return kExitBadInput;
  }
  const std::string& machine = r.machines[m->part->placement.machine_of[id]];
  auto status = (*launcher)->run_attached(machine, fabemu_argv(base, words));
  if (!status) {
    print_error("machine " + machine + ": " + status.error().what());
    return kExitFailed;
  }
  return *status;
}

int cluster_link_set(const LinkSetArgs& a, const LabPaths& base) {
  auto rec = record_of(a.lab);
  if (auto* code = std::get_if<int>(&rec)) return *code;
  const ClusterRecord& r = std::get<ClusterRecord>(rec);
  auto launcher = launcher_for(a.on.empty() ? r.launcher : a.on);
  if (!launcher) return kExitFailed;
  // Each machine changes the directions that leave its nodes.
  std::vector<std::string> words = {"link"};
  if (a.down) {
    words.insert(words.end(), {*a.down ? "down" : "up", a.lab, a.link});
    if (!a.reroute) words.push_back("--no-reroute");
  } else {
    words.insert(words.end(), {"set", a.lab, a.link});

    for (const auto& [key, value] : a.shape_options()) {
      if (value->empty()) continue;
      std::string flag = "--" + std::string(key);  // the option link set takes for the key
      std::replace(flag.begin(), flag.end(), '_', '-');
      words.insert(words.end(), {flag, *value});
    }
    if (a.reorder) words.push_back(*a.reorder ? "--reorder" : "--no-reorder");
    if (a.accept_degraded) words.push_back("--accept-degraded");
  }
  if (a.json) words.push_back("--json");  // one object per machine, a line each
  Round done = run_round(**launcher, r.machines, fabemu_argv(base, words), 120s);
  for (const auto& reply : done.replies)
    if (reply.status == kExitOk) std::printf("%s", reply.out.c_str());
  return done.code;
}

int cluster_run(const UpArgs& args, const RunArgs& run, const LabPaths& base) {
  ClusterLab c;
  int code = build_across(args, base, c);
  if (code != kExitOk) return code;
  const LabModel& m = c.model;
  const ClusterRecord& r = c.record;
  RunReport report;
  report.lab = r.lab;
  report.scenario_file = m.scenario.file;
  report.seed = m.scenario.seed;

  // Reachability: each machine pings from its hosts to every host.
  auto start = Clock::now();
  Round reach = run_round(*c.launcher, r.machines,
                          fabemu_argv(base, {"agent", "reach", "--lab", r.lab}), 600s);
  ReachabilityReport all;
  for (size_t k = 0; k < reach.replies.size() && reach.code == kExitOk; ++k) {
    auto pairs = parse_pairs(reach.replies[k].out, "machine " + r.machines[k]);
    if (!pairs) {
      print_error(pairs.error().what());
      reach.code = kExitFailed;
      break;
    }
    all.pairs.insert(all.pairs.end(), pairs->begin(), pairs->end());
  }
  if (reach.code != kExitOk || !print_reachability(m, all, seconds_since(start), report))
    code = kExitFailed;

  if (code == kExitOk && !m.scenario.workload.empty()) {
    // Every machine starts the workload, its faults and its sampler at the same moment, and
    // its ranks meet the others' through the shared directory (one Gloo run id).
    const std::string run_id =
        "c" + std::to_string(::getpid()) + "-" + std::to_string(std::time(nullptr));
    const std::string out_dir = r.shared_dir + "/" + r.lab + "/run-" + run_id;
    if (auto made = make_dirs(out_dir, 0777); !made) {
      print_error(made.error().what());
      return kExitFailed;
    }
    const int64_t start_at = realtime_ns() + 2'000'000'000;  // srun starts a step in < 1 s
    std::fflush(stdout);
    auto replies = c.launcher->run_each(
        r.machines,
        fabemu_argv(base, {"agent", "run", "--lab", r.lab, "--run-id", run_id, "--start-at",
                           std::to_string(start_at), "--out", out_dir}),
        24h, Launcher::Output::Attached);
    std::vector<RunReport> parts;
    const auto faults = expand_faults(m.scenario);
    for (size_t k = 0; replies && k < r.machines.size(); ++k) {
      const std::string path = out_dir + "/part-" + std::to_string(k) + ".json";
      auto text = read_file(path);
      auto part = text ? parse_run_part(*text, path, faults) : Result<RunReport>(text.error());
      if (!part) {
        print_error("machine " + r.machines[k] + ": no part of the run (" + part.error().what() +
                    ")");
        code = kExitFailed;
        break;
      }
      parts.push_back(std::move(*part));
    }
    if (!replies) {
      print_error(replies.error().what());
      code = kExitFailed;
    }
    if (parts.size() == r.machines.size()) {
      RunReport merged = merge_run_parts(m, r.machines, parts);
      report.steps = std::move(merged.steps);
      report.faults = std::move(merged.faults);
      report.samples = std::move(merged.samples);
      report.link_mode = merged.link_mode;
      report.sample_slack_bytes = merged.sample_slack_bytes;
      for (size_t i = 0; i < report.steps.size(); ++i) {
        StepReport& s = report.steps[i];
        if (!s.collective.empty()) {
          const std::string lines =
              r.shared_dir + "/" + r.lab + "/workload-" + std::to_string(i) + ".jsonl";
          if (auto text = read_file(lines)) {
            s.results = read_benchmark_results(*text);
            if (s.ok) s.note = ratio_note(*text);
          }
        }
        print_step(m, s);
        if (!s.ok) code = kExitFailed;
      }
      for (const std::string& n : merged.notes) std::printf("  note: %s\n", n.c_str());
    }
  } else if (code != kExitOk && !m.scenario.workload.empty()) {
    std::printf("workload not run: the fabric failed its reachability check\n");
  }
  code = std::max(
      code, finish_run(m, report,
                       run.report_dir.empty() ? default_report_dir(report.lab) : run.report_dir));
  if (run.keep) {
    std::printf("lab %s left up (--keep); `fabemu down %s --on %s` removes it\n", r.lab.c_str(),
                r.lab.c_str(), r.launcher.c_str());
    return code;
  }
  const int down = take_down(*c.launcher, r, base);
  return down != kExitOk ? down : code;
}

}  // namespace fabemu::cli
