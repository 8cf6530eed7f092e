// A lab across machines, the launching side (session/across.h).
#include "session/across.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>
#include <sstream>

#include "plan/partition.h"
#include "report/run_part.h"
#include "scenario/loader.h"
#include "util/files.h"
#include "util/process.h"
#include "util/units.h"

namespace fabemu::session {
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

Error failed(const std::string& message, Failure kind = Failure::Failed) {
  return with_failure(make_error(message), kind);
}

// A round: the same command on every machine, each reply's standard output parsed when it is
// a JSON object.
struct Round {
  std::vector<Launcher::Reply> replies;
  std::vector<Json> json;
};
// Fails when a machine's status is not in `ok`: the error says what each said (the same failure
// on several machines once: a scenario this kernel refuses), its kind the worst of theirs.
Result<Round> run_round(Launcher& l, const std::vector<std::string>& machines,
                        const std::vector<std::string>& argv, std::chrono::seconds timeout,
                        std::initializer_list<int> ok = {kExitOk}) {
  auto replies = l.run_each(machines, argv, timeout);
  if (!replies) return replies.error();
  Round r;
  r.replies = std::move(*replies);
  std::vector<std::pair<std::string, std::vector<std::string>>> failures;
  Failure worst = Failure::Failed;
  for (const Launcher::Reply& reply : r.replies) {
    r.json.push_back(Json::parse(reply.out, nullptr, /*allow_exceptions=*/false));
    if (std::find(ok.begin(), ok.end(), reply.status) != ok.end()) continue;
    const std::string text = failure_text(reply);
    auto it = std::find_if(failures.begin(), failures.end(),
                           [&](const auto& f) { return f.first == text; });
    if (it == failures.end()) it = failures.insert(failures.end(), {text, {}});
    it->second.push_back(reply.machine);
    // Bad input and an unsupported scenario are the request's; anything else a failure.
    if (const Failure f = failure_of_exit(reply.status);
        f == Failure::BadInput || (f == Failure::Unsupported && worst != Failure::BadInput))
      worst = f;
  }
  if (failures.empty()) return r;
  std::string message;
  for (const auto& [text, on] : failures)
    message += std::string(message.empty() ? "" : "\n") +
               (on.size() == 1 ? "machine " : "machines ") + comma_list(on) + ": " + text;
  return failed(message, worst);
}

Result<std::unique_ptr<Launcher>> launcher_for(const std::string& on) {
  auto l = make_launcher(on);
  if (!l && errno_of(l.error()) == EINVAL) return with_failure(l.error(), Failure::BadInput);
  return l;
}

// The record of a lab spread from here (NoLab: none) and its launcher (`on`, else the record's).
Result<AcrossLab> open_across(const std::string& lab, const std::string& on) {
  auto r = read_cluster_record(lab);
  if (!r) return absent_is_no_lab(r.error());
  auto launcher = launcher_for(on.empty() ? r->launcher : on);
  if (!launcher) return launcher.error();
  return AcrossLab{std::move(*r), std::move(*launcher)};
}

std::string realpath_of(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return path;
  std::string out = real;
  std::free(real);
  return out;
}

// Every machine's part of the lab taken down; the record and shared files go when all went.
Result<DownOutcome::Lab> take_down(Launcher& l, const ClusterRecord& r, const LabPaths& base) {
  const auto start = Clock::now();
  auto down =
      run_round(l, r.machines, fabemu_argv(base, {"down", r.lab}), 600s, {kExitOk, kExitNoLab});
  if (!down)
    return with_failure(
        down.error().context("lab " + r.lab + " is not down on every machine; `fabemu down " +
                             r.lab + " --on " + r.launcher + "` again takes down what is left"),
        failure_of(down.error()));
  remove_cluster_record(r.lab);
  std::error_code ec;
  std::filesystem::remove_all(r.shared_dir + "/" + r.lab, ec);
  DownOutcome::Lab out;
  out.lab = r.lab;
  out.taken_down = true;
  out.seconds = seconds_since(start);
  out.machines = r.machines.size();
  return out;
}

// What the machines' probes agreed on: a pool free on every one, the largest time scale any
// machine's share of the fabric needs, and why.
struct Agreement {
  int pool = 0;
  double factor = 1;
  std::string why;
};

// The probe round's replies folded into an Agreement; an error when a machine did not answer,
// already has the lab, or no pool is free on all of them.
Result<Agreement> agree(const Round& asked, const std::vector<std::string>& machines,
                        const std::string& lab) {
  Agreement out;
  std::set<int> pools;
  for (int p = 0; p < kMaxLabPools; ++p) pools.insert(p);
  for (size_t k = 0; k < machines.size(); ++k) {
    const Json& j = asked.json[k];
    if (!j.is_object())
      return failed("machine " + machines[k] + ": no answer from its agent (" +
                    failure_text(asked.replies[k]) + ")");
    if (j.value("lab_exists", false))
      return failed("machine " + machines[k] + " already has a lab named " + lab +
                    " (`fabemu down " + lab + "` there, or pick another --lab)");
    std::set<int> mine;
    for (const Json& p : j.value("free_pools", Json::array())) mine.insert(p.get<int>());
    std::erase_if(pools, [&](int p) { return !mine.count(p); });
    if (const double f = j.value("time_scale", 1.0); k == 0 || f > out.factor) {
      out.factor = f;
      out.why = j.value("time_scale_why", "");
      if (machines.size() > 1 && out.why.rfind("auto", 0) == 0) out.why += " (" + machines[k] + ")";
    }
  }
  if (pools.empty())
    return failed("no address pool is free on every machine; take down a lab on them first");
  out.pool = *pools.begin();
  return out;
}

// Before any machine is asked: the scenario, the lab's name, the launcher and its machines, a
// partition over them, no lab of that name already up. Sets the record's lab and machines.
Result<void> check_request(const UpRequest& req, AcrossLab& c) {
  auto sc = load_scenario_file(req.scenario);
  if (!sc) return with_failure(sc.error(), Failure::BadInput);
  c.record.lab = req.lab.empty() ? sc->name : req.lab;
  if (!is_valid_lab_name(c.record.lab))
    return failed("--lab: '" + c.record.lab + "' is not a lab name: 1-12 of a-z, 0-9 and '-'",
                  Failure::BadInput);
  auto launcher = launcher_for(req.on);
  if (!launcher) return launcher.error();
  c.launcher = std::move(*launcher);
  auto listed = c.launcher->machines();
  if (!listed) return listed.error();
  c.record.machines = std::move(*listed);
  auto model = build_model(*sc, 0);
  if (!model) return with_failure(model.error(), Failure::BadInput);
  if (auto p = partition(*model, static_cast<int>(c.record.machines.size())); !p)
    return failed(sc->file + ": " + p.error().what(), Failure::BadInput);
  if (auto existing = read_cluster_record(c.record.lab))
    return failed("lab " + c.record.lab + " is already up on " + comma_list(existing->machines) +
                  " (`fabemu down " + c.record.lab + " --on " + existing->launcher +
                  "` first, or --lab)");
  return {};
}

// The lab as built: the whole model, each machine's part and the machines' notes (each once).
UpOutcome built_outcome(const AcrossLab& c, LabModel whole, const Round& built, double seconds) {
  UpOutcome out;
  out.lab = c.record.lab;
  out.seconds = seconds;
  out.launcher = c.record.launcher;
  const std::vector<std::string>& machines = c.record.machines;
  const auto& of = whole.part->placement.machine_of;
  out.cut_links =
      static_cast<int>(std::count_if(whole.topo.links.begin(), whole.topo.links.end(),
                                     [&](const Link& l) { return of[l.a.node] != of[l.b.node]; }));
  std::set<std::string> seen;
  for (size_t k = 0; k < machines.size(); ++k) {
    const Json& j = built.json[k];
    out.machines.push_back({machines[k], j.value("hosts", 0), j.value("switches", 0),
                            j.value("tunnels", 0), j.value("seconds", 0.0),
                            describe_nodes(whole.topo, whole.part->placement.nodes_of(int(k)))});
    out.up.plan.routes += j.value("routes", 0);
    for (const Json& n : j.value("notes", Json::array()))
      if (seen.insert(n.get<std::string>()).second)
        out.notes.push_back((k ? machines[k] + ": " : "") + n.get<std::string>());
  }
  // The lab's own counts, the same in every machine's answer.
  const Json& first = built.json.front();
  out.up.plan.shaped_ports = first.value("shaped_ports", 0);
  out.up.plan.ovs_bridges = first.value("ovs_bridges", 0);
  out.up.plan.bgp_routers = first.value("bgp_routers", 0);
  out.up.plan.rxe_devices = first.value("rxe_devices", 0);
  const std::string mode = first.value("link_model", "fq");
  out.up.plan_options.fq = mode == "fq";
  out.up.plan_options.htb = mode == "htb";
  out.up.model = std::move(whole);
  return out;
}

}  // namespace

Result<UpOutcome> up_across(const UpRequest& req, const LabPaths& base, Observer& observer,
                            AcrossLab& c) {
  const auto start = Clock::now();
  // The scenario checked here first: a bad file is refused before any machine is asked.
  FABEMU_TRY(check_request(req, c));
  const std::string& lab = c.record.lab;
  const std::vector<std::string> machines = c.record.machines;

  // Every machine checks its part and says which pools it has free and what time scale its
  // share of the fabric needs; they must agree before anything is built.
  const std::string scenario = realpath_of(req.scenario);
  const std::string shared = cluster_shared_dir();
  std::vector<std::string> common = {
      scenario, "--lab", lab, "--machines", comma_list(machines), "--shared-dir", shared};
  if (req.accept_degraded) common.push_back("--accept-degraded");
  std::vector<std::string> probe = {"agent", "probe"};
  probe.insert(probe.end(), common.begin(), common.end());
  if (!req.time_scale.empty()) probe.insert(probe.end(), {"--time-scale", req.time_scale});
  observer.remark("asking " + std::to_string(machines.size()) + " machines (" + c.launcher->name() +
                  ") what their parts need");
  auto asked = run_round(*c.launcher, machines, fabemu_argv(base, probe), 900s);
  if (!asked) return asked.error();
  auto agreed = agree(*asked, machines, lab);
  if (!agreed) return agreed.error();

  // The record first: whatever happens from here, `down --on` finds the machines.
  c.record = ClusterRecord{lab,    c.launcher->name(), machines,   agreed->pool, scenario,
                           shared, agreed->factor,     agreed->why};
  FABEMU_TRY(write_cluster_record(c.record));
  std::vector<std::string> up = {"agent", "up"};
  up.insert(up.end(), common.begin(), common.end());
  up.insert(up.end(), {"--pool", std::to_string(c.record.pool), "--time-scale",
                       printf_string("%.17g", agreed->factor)});
  auto built = run_round(*c.launcher, machines, fabemu_argv(base, up), 3600s);
  if (!built) {
    Error e = built.error().context("lab " + lab + " did not come up on every machine");
    if (auto gone = take_down(*c.launcher, c.record, base); !gone)
      e = e.context(gone.error().what());
    else
      e.message += " (taken down again)";
    return with_failure(e, failure_of(built.error()));
  }
  auto whole = cluster_model(c.record);
  if (!whole) return whole.error();
  return built_outcome(c, std::move(*whole), *built, seconds_since(start));
}

Result<DownOutcome> down_across(const std::vector<std::string>& labs, const std::string& on,
                                const LabPaths& base) {
  if (labs.empty()) return failed("down --on: name the labs", Failure::BadInput);
  auto launcher = launcher_for(on);
  if (!launcher) return launcher.error();
  DownOutcome out;
  for (const std::string& lab : labs) {
    auto r = read_cluster_record(lab);
    if (!r) {
      // No record (the state directory lost): every machine of the allocation is asked.
      auto machines = (*launcher)->machines();
      if (!machines) return machines.error();
      r = ClusterRecord{lab, on, *machines, -1, "", cluster_shared_dir(), 1, ""};
    }
    auto done = take_down(**launcher, *r, base);
    if (done) {
      out.labs.push_back(std::move(*done));
    } else {
      DownOutcome::Lab& l = out.labs.emplace_back();
      l.lab = lab;
      l.error = done.error();
    }
  }
  return out;
}

Result<Json> status_across(const std::string& lab, const std::string& on, const LabPaths& base) {
  auto c = open_across(lab, on);
  if (!c) return c.error();
  const ClusterRecord& r = c->record;
  auto asked = run_round(*c->launcher, r.machines, fabemu_argv(base, {"status", lab, "--json"}),
                         120s, {kExitOk, kExitFailed});
  if (!asked) return asked.error();
  std::vector<Json> parts;
  for (size_t k = 0; k < r.machines.size(); ++k) {
    if (!asked->json[k].is_object())
      return failed("machine " + r.machines[k] + ": " + failure_text(asked->replies[k]));
    parts.push_back(std::move(asked->json[k]));
  }
  return merge_status(parts);
}

Result<ExecOutcome> exec_across(const ExecRequest& req, const LabPaths& base) {
  const auto colon = req.target.find(':');
  if (req.all == (colon != std::string::npos))
    return failed(
        "exec: write LAB:NODE for one node, or LAB --all for every host (got '" + req.target + "')",
        Failure::BadInput);
  if (req.keep_output)
    return failed("exec --json with --on: each machine's hosts write to the terminal",
                  Failure::BadInput);
  auto c = open_across(req.target.substr(0, colon), req.on);
  if (!c) return c.error();
  const ClusterRecord& r = c->record;
  std::vector<std::string> words = {"exec", req.target};
  if (req.all) words.push_back("--all");
  if (req.no_tag) words.push_back("--no-tag");
  if (!req.clock.empty()) words.insert(words.end(), {"--clock", req.clock});
  words.push_back("--");
  words.insert(words.end(), req.argv.begin(), req.argv.end());
  ExecOutcome out;
  out.lab = r.lab;
  if (req.all) {
    // Every machine runs its own hosts' processes, ranks numbered over the whole lab.
    auto replies = c->launcher->run_each(r.machines, fabemu_argv(base, words), 24h,
                                         Launcher::Output::Attached);
    if (!replies) return replies.error();
    for (const auto& reply : *replies)
      out.status = std::max(out.status, reply.status < 0 ? 1 : reply.status);
    return out;
  }
  auto m = cluster_model(r);
  if (!m) return m.error();
  const int id = m->topo.find(req.target.substr(colon + 1));
  if (id < 0)
    return failed(
        "exec: lab " + r.lab + " has no node named '" + req.target.substr(colon + 1) + "'",
        Failure::BadInput);
  const std::string& machine = r.machines[m->part->placement.machine_of[id]];
  auto status = c->launcher->run_attached(machine, fabemu_argv(base, words));
  if (!status) return status.error().context("machine " + machine);
  out.status = *status;
  return out;
}

Result<LinkOutcome> link_across(const LinkRequest& req, const LabPaths& base) {
  auto c = open_across(req.lab, req.on);
  if (!c) return c.error();
  // Each machine changes the directions that leave its nodes.
  std::vector<std::string> words = {"link"};
  if (req.down) {
    words.insert(words.end(), {*req.down ? "down" : "up", req.lab, req.link});
    if (!req.reroute) words.push_back("--no-reroute");
  } else {
    words.insert(words.end(), {"set", req.lab, req.link});
    for (const auto& [key, value] : req.settings) {
      std::string flag = "--" + key;  // the option `link set` takes for the key
      std::replace(flag.begin(), flag.end(), '_', '-');
      words.insert(words.end(), {flag, value});
    }
    if (req.reorder) words.push_back(*req.reorder ? "--reorder" : "--no-reorder");
    if (req.accept_degraded) words.push_back("--accept-degraded");
  }
  words.push_back("--json");
  auto done = run_round(*c->launcher, c->record.machines, fabemu_argv(base, words), 120s);
  if (!done) return done.error();
  LinkOutcome out;
  out.lab = req.lab;
  out.link = req.link;
  out.action = req.down ? (*req.down ? "down" : "up") : "set";
  out.machines = c->record.machines;
  for (const Json& answer : done->json) {
    for (const Json& ch : answer.value("changes", Json::array()))
      out.changes.push_back({ch.value("direction", ""), shape_from_json(ch.value("before", Json())),
                             shape_from_json(ch.value("after", Json())),
                             ch.value("attached_now", false)});
    if (answer.contains("rerouted") && answer["rerouted"].is_string())
      out.rerouted =
          (out.rerouted ? *out.rerouted + "; " : "") + answer["rerouted"].get<std::string>();
  }
  return out;
}

Result<ReachabilityReport> reach_across(AcrossLab& c, const LabPaths& base) {
  const ClusterRecord& r = c.record;
  auto reach = run_round(*c.launcher, r.machines,
                         fabemu_argv(base, {"agent", "reach", "--lab", r.lab}), 600s);
  if (!reach) return reach.error();
  ReachabilityReport all;
  for (size_t k = 0; k < reach->replies.size(); ++k) {
    auto pairs = parse_pairs(reach->replies[k].out, "machine " + r.machines[k]);
    if (!pairs) return pairs.error();
    all.pairs.insert(all.pairs.end(), pairs->begin(), pairs->end());
  }
  return all;
}

namespace {

// The machines' parts of a run (out_dir/part-K.json) merged, with each collective step's
// results from the shared directory; each step to the observer.
bool merge_parts(const AcrossLab& c, const LabModel& m, const std::string& out_dir,
                 RunReport& report, Observer& observer) {
  const ClusterRecord& r = c.record;
  std::vector<RunReport> parts;
  const auto faults = expand_faults(m.scenario);
  for (size_t k = 0; k < r.machines.size(); ++k) {
    const std::string path = out_dir + "/part-" + std::to_string(k) + ".json";
    auto text = read_file(path);
    auto part = text ? parse_run_part(*text, path, faults) : Result<RunReport>(text.error());
    if (!part) {
      report.notes.push_back("machine " + r.machines[k] + ": no part of the run (" +
                             part.error().what() + ")");
      return false;
    }
    parts.push_back(std::move(*part));
  }
  RunReport merged = merge_run_parts(m, r.machines, parts);
  report.steps = std::move(merged.steps);
  report.faults = std::move(merged.faults);
  report.samples = std::move(merged.samples);
  report.link_mode = merged.link_mode;
  report.sample_slack_bytes = merged.sample_slack_bytes;
  report.notes.insert(report.notes.end(), merged.notes.begin(), merged.notes.end());
  bool ok = true;
  for (size_t i = 0; i < report.steps.size(); ++i) {
    StepReport& s = report.steps[i];
    const auto* c = i < m.scenario.workload.size()
                        ? std::get_if<CollectiveStep>(&m.scenario.workload[i].step)
                        : nullptr;
    if (c) {
      s.library = c->library;  // as play_workload records them on one machine
      s.transport = resolve_transport(c->transport, m.rdma.rxe);
    }
    if (!s.collective.empty()) {
      const std::string lines =
          r.shared_dir + "/" + r.lab + "/workload-" + std::to_string(i) + ".jsonl";
      if (auto text = read_file(lines)) {
        s.results = read_benchmark_results(*text);
        if (s.ok) s.note = ratio_note(*text);
      }
    }
    observer.step_done(m, s, "");
    ok = ok && s.ok;
  }
  return ok;
}

}  // namespace

bool workload_across(AcrossLab& c, const LabModel& m, const LabPaths& base, RunReport& report,
                     Observer& observer) {
  const ClusterRecord& r = c.record;
  // Every machine starts the workload, its faults and its sampler at the same moment, and its
  // ranks meet the others' through the shared directory (one Gloo run id).
  const std::string run_id =
      "c" + std::to_string(::getpid()) + "-" + std::to_string(std::time(nullptr));
  const std::string out_dir = r.shared_dir + "/" + r.lab + "/run-" + run_id;
  if (auto made = make_dirs(out_dir, 0777); !made) {
    report.notes.push_back(made.error().what());
    return false;
  }
  const int64_t start_at = realtime_ns() + 2'000'000'000;  // srun starts a step in < 1 s
  auto replies = c.launcher->run_each(
      r.machines,
      fabemu_argv(base, {"agent", "run", "--lab", r.lab, "--run-id", run_id, "--start-at",
                         std::to_string(start_at), "--out", out_dir}),
      24h, Launcher::Output::Attached);
  if (!replies) {
    report.notes.push_back(replies.error().what());
    return false;
  }
  return merge_parts(c, m, out_dir, report, observer);
}

}  // namespace fabemu::session
