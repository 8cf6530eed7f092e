// Fault timeline: expansion (flaps, seeded jitter, restores) and the player thread.
#include "runtime/faults.h"

#include <net/if.h>

#include <algorithm>
#include <map>

#include "apply/journal.h"
#include "apply/link_control.h"
#include "model/workload_estimate.h"
#include "runtime/host_faults.h"
#include "util/prng.h"
#include "util/units.h"

namespace fabemu {
namespace {

using Clock = std::chrono::steady_clock;

// The PRNG of an event's jitter: its own splitmix64 stream per event, from the scenario's seed.
struct Jitter {
  uint64_t state;
  uint64_t next(uint64_t max_ns) {
    if (max_ns == 0) return 0;
    const uint64_t z = splitmix64(state);
    state += 0x9e3779b97f4a7c15ULL;
    return z % (max_ns + 1);
  }
};

}  // namespace

std::vector<FaultStep> expand_faults(const Scenario& s) {
  std::vector<FaultStep> steps;
  for (size_t i = 0; i < s.faults.size(); ++i) {
    const FaultEvent& f = s.faults[i];
    FaultStep base;
    base.at_ns = f.at_ns;
    base.event = i;
    base.target = f.host.empty() ? f.link : f.host;
    base.reroute = f.reroute;
    if (f.set) {
      base.kind = FaultStep::Kind::Shape;
      base.shape = *f.set;
      base.what = f.link + " set " + f.set->str();
      steps.push_back(base);
    } else if (f.down || f.up) {
      base.kind = f.down ? FaultStep::Kind::Down : FaultStep::Kind::Up;
      base.what = f.link + (f.down ? " down" : " up") + (f.reroute ? "" : " (no reroute)");
      steps.push_back(base);
    } else if (f.flap) {
      Jitter jitter{link_seed(s.seed, "fault " + std::to_string(i))};
      uint64_t t = f.at_ns;
      for (int k = 1; k <= f.flap->count; ++k) {
        const std::string n =
            " (flap " + std::to_string(k) + "/" + std::to_string(f.flap->count) + ")";
        FaultStep down = base, up = base;
        down.kind = FaultStep::Kind::Down;
        down.at_ns = t;
        down.what = f.link + " down" + n;
        t += f.flap->down_ns + jitter.next(f.flap->jitter_ns);
        up.kind = FaultStep::Kind::Up;
        up.at_ns = t;
        up.what = f.link + " up" + n;
        t += f.flap->up_ns + jitter.next(f.flap->jitter_ns);
        steps.push_back(down);
        steps.push_back(up);
      }
    } else if (!f.partition.empty()) {
      std::string groups;
      for (const auto& g : f.partition) {
        std::string names;
        for (const auto& h : g) names += (names.empty() ? "" : ",") + h;
        groups += (groups.empty() ? "" : " | ") + names;
      }
      base.kind = FaultStep::Kind::Partition;
      base.groups = f.partition;
      base.target = "partition";
      base.what = "partition " + groups;
      steps.push_back(base);
      if (f.for_ns) {
        FaultStep heal = base;
        heal.kind = FaultStep::Kind::Heal;
        heal.at_ns = f.at_ns + f.for_ns;
        heal.what = "partition healed";
        steps.push_back(heal);
      }
    } else if (f.crash || f.restart) {
      base.kind = f.crash ? FaultStep::Kind::Crash : FaultStep::Kind::Restart;
      base.what = f.host + (f.crash ? " crashes" : " restarts");
      steps.push_back(base);
    } else if (f.freeze_ns) {
      base.kind = FaultStep::Kind::Freeze;
      base.what = f.host + " frozen for " + format_time_ns(f.freeze_ns);
      steps.push_back(base);
      FaultStep thaw = base;
      thaw.kind = FaultStep::Kind::Thaw;
      thaw.at_ns = f.at_ns + f.freeze_ns;
      thaw.what = f.host + " thawed";
      steps.push_back(thaw);
    } else if (!f.nic_down.empty() || !f.nic_up.empty()) {
      const bool down = !f.nic_down.empty();
      base.kind = down ? FaultStep::Kind::NicDown : FaultStep::Kind::NicUp;
      base.nic = down ? f.nic_down : f.nic_up;
      base.what = f.host + " " + base.nic + (down ? " down" : " up");
      steps.push_back(base);
    } else if (f.slow_cpu) {
      base.kind = FaultStep::Kind::Cpu;
      base.cpu = f.slow_cpu;
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", *f.slow_cpu);
      base.what = f.host + " slowed to " + buf + " CPU";
      steps.push_back(base);
      if (f.for_ns) {
        FaultStep back = base;
        back.at_ns = f.at_ns + f.for_ns;
        back.cpu.reset();
        back.what = f.host + " back to full speed";
        steps.push_back(back);
      }
    }
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const FaultStep& a, const FaultStep& b) { return a.at_ns < b.at_ns; });
  return steps;
}

std::vector<AppliedFault> fault_log(const LabModel& model, std::vector<FaultStep> steps) {
  std::vector<AppliedFault> log;
  for (auto& s : steps) {
    AppliedFault a;
    a.due_s = 1e-9 * double(s.at_ns);
    a.due_wall_s = model.time_scale.wall_s(a.due_s);
    a.step = std::move(s);
    log.push_back(std::move(a));
  }
  return log;
}

std::string fault_timeline_note(const LabModel& m) {
  const auto steps = expand_faults(m.scenario);
  if (steps.empty()) return "";
  const TimeScale& t = m.time_scale;
  const double last_s = 1e-9 * double(steps.back().at_ns);
  auto both = [&](double real_s) {
    return format_time_short(static_cast<uint64_t>(real_s * 1e9)) +
           (t.dilated() ? printf_string(" of the real fabric (%.1f s of wall clock at x%s)",
                                        t.wall_s(real_s), format_factor(t.factor).c_str())
                        : "");
  };
  std::string note = "faults: " + std::to_string(steps.size()) +
                     (steps.size() == 1 ? " step, due " : " steps, the last due ") + both(last_s) +
                     " after the workload starts";
  const WorkloadEstimate w = estimate_workload(m);
  if (m.scenario.workload.empty())
    return note + "; there is no workload to time them from: none will be played";
  if (w.unknown_steps == int(m.scenario.workload.size())) return note;
  note +=
      "; the workload takes about " + both(w.real_s) + " by the link model, plus " +
      (w.unknown_steps ? "its " + std::to_string(w.unknown_steps) + " steps of unknown length and "
                       : std::string()) +
      "starting its ranks";
  size_t late = 0;
  for (const FaultStep& s : steps) late += 1e-9 * double(s.at_ns) > w.real_s;
  if (late == 0) return note;
  return note + ": " + std::to_string(late) + (late == 1 ? " step " : " steps ") +
         (w.unknown_steps ? "may" : "will") +
         " come after its end and not be played, which fails the run unless the scenario says "
         "`expect: {faults_played: any}`";
}

FaultPlayer::FaultPlayer(const LabModel& model, const LabPaths& paths, std::vector<FaultStep> steps,
                         std::unique_ptr<LabDatapath> dp)
    : model_(model),
      paths_(paths),
      log_(fault_log(model, std::move(steps))),
      dp_(dp ? std::move(dp) : kernel_datapath(model, paths)) {
  // Opening the maps loads and verifies the link model: here, before the workload starts, so
  // that a link fault lands when it is due even while the ranks keep every CPU busy. (Opened
  // late, apply() tries again and says why it cannot.)
  bool links = false;
  using K = FaultStep::Kind;
  for (const AppliedFault& a : log_)
    links |= a.step.kind != K::Cpu && a.step.kind != K::Freeze && a.step.kind != K::Thaw &&
             a.step.kind != K::Partition && a.step.kind != K::Heal;
  if (links) (void)dp_->open_link_model();
  if (links && !model.bgp.empty()) {
    if (auto w = FibWatcher::start(model, paths))
      fib_ = std::move(*w);
    else
      fib_error_ = w.error().what();
  }
}

FaultPlayer::~FaultPlayer() {
  stop();
}

void FaultPlayer::start(Clock::time_point t0) {
  t0_ = t0;
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void FaultPlayer::stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void FaultPlayer::wait() {
  if (thread_.joinable()) thread_.join();
}

std::vector<AppliedFault> FaultPlayer::log() const {
  std::vector<AppliedFault> out;
  {
    std::lock_guard lock(mu_);
    out = log_;
  }
  if (!fib_) return out;
  // Each link step owns the FIB changes from when it took effect to the next link step's.
  const std::vector<FibChange> changes = fib_->changes();
  for (size_t i = 0; i < out.size(); ++i) {
    AppliedFault& a = out[i];
    if (!a.done || !a.step.link_step()) continue;
    const auto from = t0_ + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(a.applied_wall_s));
    auto until = Clock::time_point::max();
    for (size_t j = i + 1; j < out.size(); ++j)
      if (out[j].done && out[j].step.link_step()) {
        until = t0_ + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(out[j].applied_wall_s));
        break;
      }
    std::set<int> switches;
    for (const FibChange& c : changes) {
      if (c.at < from || c.at >= until) continue;
      const double s = model_.time_scale.real_s(std::chrono::duration<double>(c.at - from).count());
      if (!a.fib_first_s) a.fib_first_s = s;
      a.fib_last_s = s;
      a.fib_routes += c.routes;
      switches.insert(c.node);
    }
    a.fib_switches = static_cast<int>(switches.size());
    if (a.fib_first_s)
      a.detail += printf_string(
          "; FIB changed on %d switches (%d routes), first after %.0f ms, "
          "last after %.0f ms",
          a.fib_switches, a.fib_routes, *a.fib_first_s * 1e3, *a.fib_last_s * 1e3);
    else
      a.detail += "; no FIB changed";
  }
  return out;
}

void FaultPlayer::run(std::stop_token stop) {
  for (size_t i = 0; i < log_.size(); ++i) {
    // The timeline is the real fabric's; a dilated lab plays it N times slower.
    const auto due = t0_ + std::chrono::nanoseconds(model_.time_scale.wall_ns(log_[i].step.at_ns));
    {
      std::unique_lock lock(mu_);
      cv_.wait_until(lock, stop, due, [] { return false; });
      if (stop.stop_requested()) return;
    }
    auto r = apply(log_[i].step);
    const double wall = std::chrono::duration<double>(Clock::now() - t0_).count();
    std::lock_guard lock(mu_);
    log_[i].applied_s = model_.time_scale.real_s(wall);
    log_[i].applied_wall_s = wall;
    log_[i].done = static_cast<bool>(r);
    if (r)
      log_[i].detail = *r;
    else
      log_[i].error = r.error().what();
  }
}

Result<std::string> FaultPlayer::apply(const FaultStep& s) {
  using K = FaultStep::Kind;
  switch (s.kind) {
    case K::Partition:
    case K::Heal:
      return set_partition(model_, s.groups, s.kind == K::Partition, *dp_);
    case K::Cpu:
    case K::Crash:
    case K::Restart:
    case K::Freeze:
    case K::Thaw:
    case K::NicDown:
    case K::NicUp: {
      const int id = model_.topo.find(s.target);
      if (!local_node(model_, id)) return std::string(kElsewhere);
      if (s.kind == K::Crash) return crash_host(model_, paths_, s.target, *dp_);
      if (s.kind == K::Restart) return restart_host(model_, paths_, s.target, *dp_);
      if (s.kind == K::Freeze || s.kind == K::Thaw)
        return freeze_host(model_, s.target, s.kind == K::Freeze, *dp_);
      if (s.kind == K::NicDown || s.kind == K::NicUp)
        return set_nic(model_, paths_, s.target, s.nic, s.kind == K::NicUp, *dp_);
      const auto cpu = s.cpu ? s.cpu : model_.topo.nodes[id].limits.cpu;
      FABEMU_TRY(dp_->set_cpu_quota(s.target, cpu));
      return std::string(cpu ? "cgroup CPU quota set" : "cgroup CPU quota removed");
    }
    default:
      break;
  }
  LinkShape change = s.shape;
  if (s.kind != K::Shape) change.down = s.kind == K::Down;
  auto changed = change_links(paths_, model_, s.target, change, {true}, *dp_);
  if (!changed) return changed.error();
  // A lab across machines: every machine reroutes its own switches, whoever owns the link.
  const bool here = !changed->empty();
  if (s.kind == K::Shape || !s.reroute)
    return std::string(here ? "link model updated" : kElsewhere);
  auto links = links_named(model_.topo, s.target);
  if (!links) return links.error();
  auto rerouted = dp_->set_failed_links(*links, s.kind == K::Down);
  if (!rerouted || model_.bgp.empty()) return rerouted;
  const auto& bfd = model_.scenario.fabric.bfd;
  return std::string(s.kind == K::Down ? "link model drops everything" : "link model carries") +
         "; BGP reroutes (" +
         (bfd ? "BFD every " + format_time_ns(bfd->interval_ns) + " x " +
                    std::to_string(bfd->multiplier)
              : std::string("no BFD: BGP's hold timer")) +
         ")" + (fib_ ? "" : "; FIB changes not recorded: " + fib_error_);
}

}  // namespace fabemu
