// Small behaviour of the scenario data: locations as text and merging of optional settings.
#include "scenario/scenario.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "util/units.h"

namespace fabemu {

std::string SourceLoc::str() const {
  std::string out = file.empty() ? "<unknown>" : file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  return out;
}

namespace {

template <typename T>
void take_if_set(std::optional<T>& ours, const std::optional<T>& theirs) {
  if (theirs) ours = theirs;
}

}  // namespace

void LinkShape::merge(const LinkShape& over) {
  take_if_set(rate_bps, over.rate_bps);
  take_if_set(delay_ns, over.delay_ns);
  take_if_set(jitter_ns, over.jitter_ns);
  take_if_set(reorder, over.reorder);
  // Bernoulli and burst loss are one setting too.
  if (over.loss || over.loss_burst) {
    loss = over.loss;
    loss_burst = over.loss_burst;
  }
  // The queue limit is one setting spelled as a time or a size: a more specific level that
  // gives either replaces both, so "queue: 64K" over "queue: 200us" does not keep 200us too.
  if (over.queue_ns || over.queue_bytes) {
    queue_ns = over.queue_ns;
    queue_bytes = over.queue_bytes;
  }
  take_if_set(ecn_threshold_ns, over.ecn_threshold_ns);
  take_if_set(ecn_threshold_bytes, over.ecn_threshold_bytes);
  take_if_set(ecn, over.ecn);
  take_if_set(down, over.down);
  take_if_set(pfc, over.pfc);
  take_if_set(corrupt, over.corrupt);
  take_if_set(duplicate, over.duplicate);
}

std::optional<uint64_t> queue_capacity_bytes(const LinkShape& s) {
  if (!s.rate_bps.value_or(0)) return std::nullopt;
  const bool timed = s.queue_ns.value_or(0) > 0, sized = s.queue_bytes.value_or(0) > 0;
  const uint64_t ns = timed ? *s.queue_ns : sized ? 0 : kDefaultQueueNs;
  uint64_t bytes = sized ? *s.queue_bytes : UINT64_MAX;
  if (ns)
    bytes = std::min<uint64_t>(bytes,
                               static_cast<uint64_t>(double(ns) * 1e-9 * double(*s.rate_bps) / 8));
  return bytes;
}

const char* per_frame_draw(const LinkShape& s) {
  if (s.loss.value_or(0) > 0) return "loss";
  if (s.loss_burst) return "loss_burst";
  if (s.corrupt.value_or(0) > 0) return "corrupt";
  if (s.duplicate.value_or(0) > 0) return "duplicate";
  return nullptr;
}

std::string LinkShape::str() const {
  std::string out;
  auto add = [&](const std::string& field) { out += (out.empty() ? "" : ", ") + field; };
  auto percent = [](double p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g%%", p * 100);
    return std::string(buf);
  };
  if (down.value_or(false)) add("down");
  if (rate_bps) add("rate " + format_rate(*rate_bps));
  if (delay_ns) add("delay " + format_time_ns(*delay_ns));
  if (jitter_ns) add("jitter " + format_time_ns(*jitter_ns));
  if (reorder) add(std::string("reorder ") + (*reorder ? "true" : "false"));
  if (loss) add("loss " + percent(*loss));
  if (loss_burst)
    add("loss_burst {p " + percent(loss_burst->p) + ", r " + percent(loss_burst->r) +
        ", loss_bad " + percent(loss_burst->loss_bad) + ", loss_good " +
        percent(loss_burst->loss_good) + "}");
  if (queue_ns) add("queue " + format_time_ns(*queue_ns));
  if (queue_bytes) add("queue " + format_size(*queue_bytes));
  if (ecn_threshold_ns.value_or(0)) add("ecn_threshold " + format_time_ns(*ecn_threshold_ns));
  if (ecn_threshold_bytes.value_or(0)) add("ecn_threshold " + format_size(*ecn_threshold_bytes));
  // A live change's zero turns it off.
  if ((ecn_threshold_ns || ecn_threshold_bytes) && !ecn_threshold_ns.value_or(0) &&
      !ecn_threshold_bytes.value_or(0))
    add("ecn_threshold off");
  if (ecn && ecn->kmax_bytes)
    add("ecn {kmin " + format_size(ecn->kmin_bytes) + ", kmax " + format_size(ecn->kmax_bytes) +
        ", pmax " + percent(ecn->pmax) + "}");
  else if (ecn)
    add("ecn off");
  if (pfc && pfc->dynamic())
    add("pfc {xoff dynamic, xon_offset " + format_size(pfc->xon_bytes) +
        (pfc->watchdog_ns ? ", watchdog " + format_time_ns(pfc->watchdog_ns) : "") + "}");
  else if (pfc && pfc->xoff_bytes)
    add("pfc {xoff " + format_size(pfc->xoff_bytes) + ", xon " + format_size(pfc->xon_bytes) +
        (pfc->watchdog_ns ? ", watchdog " + format_time_ns(pfc->watchdog_ns) : "") + "}");
  else if (pfc)
    add("pfc off");
  if (corrupt.value_or(0)) add("corrupt " + percent(*corrupt));
  if (duplicate.value_or(0)) add("duplicate " + percent(*duplicate));
  return out;
}

bool LinkShape::empty() const {
  return *this == LinkShape{};
}

void HostLimits::merge(const HostLimits& over) {
  take_if_set(cpu, over.cpu);
  take_if_set(memory_bytes, over.memory_bytes);
}

}  // namespace fabemu

namespace fabemu {

std::optional<int> switch_tier_named(std::string_view name) {
  if (name == "leaf" || name == "edge") return 1;
  if (name == "spine" || name == "agg") return 2;
  if (name == "core") return 3;
  return std::nullopt;
}

LoadBalance FabricSpec::load_balance_of(const std::string& node, int tier) const {
  const LoadBalance* by_tier = nullptr;
  for (const auto& o : load_balance_overrides) {
    if (o.target == node) return o.lb;
    if (switch_tier_named(o.target) == tier) by_tier = &o.lb;
  }
  return by_tier ? *by_tier : load_balance;
}

SwitchBuffer SwitchBuffersSpec::of(const std::string& node, int tier) const {
  SwitchBuffer b = defaults;
  // The tier's overrides first, then the switch's own: the more specific wins.
  for (const bool by_name : {false, true})
    for (const auto& o : overrides) {
      if (by_name ? o.target != node : switch_tier_named(o.target) != tier) continue;
      if (o.bytes) b.bytes = *o.bytes;
      if (o.alpha) b.alpha = *o.alpha;
    }
  return b;
}

bool SwitchBuffersSpec::any() const {
  return defaults.bytes || std::any_of(overrides.begin(), overrides.end(),
                                       [](const auto& o) { return o.bytes.value_or(0) != 0; });
}

bool Scenario::has_load_balance_step() const {
  return std::any_of(workload.begin(), workload.end(), [](const WorkloadStep& w) {
    return std::holds_alternative<LoadBalanceStep>(w.step);
  });
}

bool FabricSpec::ebpf_balancing() const {
  if (load_balance.in_ebpf(ecmp_hash)) return true;
  return std::any_of(load_balance_overrides.begin(), load_balance_overrides.end(),
                     [&](const auto& o) { return o.lb.in_ebpf(ecmp_hash); });
}

}  // namespace fabemu
