// The fault timeline expanded (flaps, seeded jitter, restores), logged, and said before a run.
#include "results/faults.h"

#include <algorithm>
#include <map>

#include "model/workload_estimate.h"
#include "util/prng.h"
#include "util/units.h"

namespace fabemu {
namespace {

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

}  // namespace fabemu
