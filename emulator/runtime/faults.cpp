// The fault timeline's player thread (its expansion: results/faults.cpp).
#include "runtime/faults.h"

#include <net/if.h>

#include <algorithm>
#include <map>
#include <memory>

#include "apply/journal.h"
#include "apply/link_control.h"
#include "apply/reroute.h"
#include "plan/switches.h"
#include "runtime/host_faults.h"
#include "util/units.h"

namespace fabemu {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

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
  if (links && switches_of(model).reroute() == Switches::Reroute::Protocol) {
    // Balancing routers' groups follow their FIBs as BGP changes them.
    std::function<void()> follow;
    // The maps opened here, once: loading them verifies the program, which would take longer
    // than BGP's own update.
    if (!balance_switches(model, paths).empty()) {
      if (auto maps = open_link_model(paths)) {
        follow = [this, shared = std::make_shared<LinkShaper>(std::move(*maps))] {
          if (auto r = balance_from_fibs(model_, paths_, *shared); !r) {
            std::lock_guard lock(mu_);
            if (balance_error_.empty()) balance_error_ = r.error().what();
          }
        };
      } else {
        balance_error_ = maps.error().what();
      }
    }
    if (auto w = FibWatcher::start(model, paths, std::move(follow)))
      fib_ = std::move(*w);
    else
      fib_error_ = w.error().what();
  }
}

FaultPlayer::~FaultPlayer() {
  stop();
  fib_.reset();  // its thread calls back into this object
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
  std::lock_guard lock(mu_);
  if (!balance_error_.empty())
    for (AppliedFault& a : out)
      if (a.done && a.step.link_step())
        a.detail += "; the balancers could not follow the FIBs: " + balance_error_;
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
  if (!rerouted || switches_of(model_).reroute() != Switches::Reroute::Protocol) return rerouted;
  const auto& bfd = model_.scenario.fabric.bfd;
  return std::string(s.kind == K::Down ? "link model drops everything" : "link model carries") +
         "; BGP reroutes (" +
         (bfd ? "BFD every " + format_time_ns(bfd->interval_ns) + " x " +
                    std::to_string(bfd->multiplier)
              : std::string("no BFD: BGP's hold timer")) +
         ")" + (fib_ ? "" : "; FIB changes not recorded: " + fib_error_);
}

}  // namespace fabemu
