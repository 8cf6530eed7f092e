// Fault timeline: expansion (flaps, seeded jitter, restores) and the player thread.
#include "runtime/faults.h"

#include <net/if.h>

#include <algorithm>
#include <map>

#include "apply/cgroup.h"
#include "apply/journal.h"
#include "apply/link_control.h"
#include "apply/rtnl.h"
#include "runtime/host_faults.h"
#include "util/netns.h"
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

std::string route_key(const Route& r) {
  std::string k = r.dst.str();
  for (const Nexthop& h : r.nexthops) k += " " + h.gateway.str() + "@" + std::to_string(h.link);
  if (r.src) k += " src " + r.src->str();
  return k;
}

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

FaultPlayer::FaultPlayer(const LabModel& model, const LabPaths& paths, std::vector<FaultStep> steps)
    : model_(model), paths_(paths), current_(model.routes) {
  for (auto& s : steps) {
    AppliedFault a;
    a.due_s = 1e-9 * double(s.at_ns);
    a.due_wall_s = model.time_scale.wall_s(a.due_s);
    a.step = std::move(s);
    log_.push_back(std::move(a));
  }
  // Opening the maps loads and verifies the link model: here, before the workload starts, so
  // that a link fault lands when it is due even while the ranks keep every CPU busy. (Opened
  // late, apply() tries again and says why it cannot.)
  bool links = false;
  using K = FaultStep::Kind;
  for (const AppliedFault& a : log_)
    links |= a.step.kind != K::Cpu && a.step.kind != K::Freeze && a.step.kind != K::Thaw &&
             a.step.kind != K::Partition && a.step.kind != K::Heal;
  if (links)
    if (auto maps = open_link_model(paths_)) maps_.emplace(std::move(*maps));
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
  LinkShaper* maps = maps_ ? &*maps_ : nullptr;
  switch (s.kind) {
    case K::Partition:
    case K::Heal:
      return set_partition(model_, paths_, s.groups, s.kind == K::Partition);
    case K::Cpu:
    case K::Crash:
    case K::Restart:
    case K::Freeze:
    case K::Thaw:
    case K::NicDown:
    case K::NicUp: {
      const int id = model_.topo.find(s.target);
      if (!local_node(model_, id)) return std::string(kElsewhere);
      if (s.kind == K::Crash) return crash_host(model_, paths_, s.target, maps);
      if (s.kind == K::Restart) return restart_host(model_, paths_, s.target, maps);
      if (s.kind == K::Freeze || s.kind == K::Thaw)
        return freeze_host(model_, paths_, s.target, s.kind == K::Freeze);
      if (s.kind == K::NicDown || s.kind == K::NicUp)
        return set_nic(model_, paths_, s.target, s.nic, s.kind == K::NicUp, maps);
      const auto cpu = s.cpu ? s.cpu : model_.topo.nodes[id].limits.cpu;
      FABEMU_TRY(set_cpu_quota(detect_cgroups(), host_cgroup(paths_, s.target), cpu));
      return std::string(cpu ? "cgroup CPU quota set" : "cgroup CPU quota removed");
    }
    default:
      break;
  }
  LinkShape change = s.shape;
  if (s.kind != K::Shape) change.down = s.kind == K::Down;
  if (!maps_) {
    auto maps = open_link_model(paths_);
    if (!maps) return maps.error();
    maps_.emplace(std::move(*maps));
  }
  auto changed = change_links(paths_, model_, s.target, change, {true}, &*maps_);
  if (!changed) return changed.error();
  // A lab across machines: every machine reroutes its own switches, whoever owns the link.
  const bool here = !changed->empty();
  if (s.kind == K::Shape || !s.reroute)
    return std::string(here ? "link model updated" : kElsewhere);
  auto dirs = find_directions(model_.topo, s.target);
  if (!dirs) return dirs.error();
  for (const Direction& d : *dirs) {
    if (s.kind == K::Down)
      failed_.insert(d.link);
    else
      failed_.erase(d.link);
  }
  if (!model_.bgp.empty()) {
    const auto& bfd = model_.scenario.fabric.bfd;
    return std::string(s.kind == K::Down ? "link model drops everything" : "link model carries") +
           "; BGP reroutes (" +
           (bfd ? "BFD every " + format_time_ns(bfd->interval_ns) + " x " +
                      std::to_string(bfd->multiplier)
                : std::string("no BFD: BGP's hold timer")) +
           ")" + (fib_ ? "" : "; FIB changes not recorded: " + fib_error_);
  }
  return reroute();
}

Result<std::string> FaultPlayer::reroute() {
  const bool ovs = ovs_switches(model_);
  auto next = plan_routes(model_.topo, model_.addresses, failed_);
  if (!next)
    return std::string(ovs ? "flows" : "routes") + " unchanged: no way around the failed links (" +
           next.error().what() + ")";
  int switches = 0, changes = 0;
  for (int sw : model_.topo.switches()) {
    if (!local_node(model_, sw)) continue;  // its machine reroutes it
    std::map<std::string, const Route*> before, after;
    for (const Route& r : current_[sw]) before[r.dst.str()] = &r;
    for (const Route& r : (*next)[sw]) after[r.dst.str()] = &r;
    std::vector<const Route*> put;
    std::vector<Prefix> drop;
    for (const auto& [dst, r] : after)
      if (!before.count(dst) || route_key(*before[dst]) != route_key(*r)) put.push_back(r);
    for (const auto& [dst, r] : before)
      if (!after.count(dst)) drop.push_back(r->dst);
    if (put.empty() && drop.empty()) continue;
    ++switches;
    changes += static_cast<int>(put.size() + drop.size());
    if (ovs) {
      // An OVS switch gets the flows and groups of its new routes, in one bundle.
      FABEMU_TRY(replace_bridge(sw, (*next)[sw]));
      continue;
    }
    const std::string where = node_ns(model_, paths_, sw);
    FABEMU_TRY(run_in_netns(node_netns_path(model_, paths_, sw), [&]() -> Result<void> {
      auto sock = RtnlSocket::open();
      if (!sock) return sock.error();
      for (const Route* r : put) {
        std::vector<RtnlSocket::Hop> hops;
        for (const Nexthop& h : r->nexthops) {
          const std::string& ifname = model_.topo.links[h.link].end(sw).ifname;
          const unsigned idx = ::if_nametoindex(ifname.c_str());
          if (idx == 0) return errno_error("finding " + ifname + " in " + where);
          hops.push_back({h.gateway, static_cast<int>(idx)});
        }
        FABEMU_TRY(sock->replace_route(r->dst, hops, r->src, r->dst.str() + " in " + where));
      }
      for (const Prefix& p : drop) FABEMU_TRY(sock->delete_route(p, p.str() + " in " + where));
      return ok();
    }));
  }
  current_ = std::move(*next);
  if (ovs)
    return "rerouted: flows and groups replaced on " + std::to_string(switches) + " OVS bridges";
  return "rerouted: " + std::to_string(changes) + " route changes on " + std::to_string(switches) +
         " switches";
}

Result<void> FaultPlayer::replace_bridge(int sw, const std::vector<Route>& routes) {
  if (!ovs_tools_) {
    auto tools = find_ovs_tools();
    if (!tools) return tools.error();
    ovs_tools_ = std::move(*tools);
  }
  if (pool_ < 0) {
    auto j = read_journal(paths_.journal());
    if (!j) return j.error();
    pool_ = j->pool;
  }
  return replace_ovs_flows(*ovs_tools_, paths_.ovs_dir(),
                           ovs_bridge(model_.topo, model_.addresses, routes, sw,
                                      model_.scenario.fabric, model_.scenario.seed, pool_));
}

}  // namespace fabemu
