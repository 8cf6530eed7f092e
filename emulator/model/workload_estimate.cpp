// The workload's length by the link model: collectives predicted, incasts by their duration.
#include "model/workload_estimate.h"

#include <variant>

#include "model/collective_model.h"

namespace fabemu {

// fabemu-collective's warm-up iterations before the timed ones, at every size.
constexpr int kWarmupIterations = 2;

WorkloadEstimate estimate_workload(const LabModel& m) {
  WorkloadEstimate e;
  const int hosts = m.topo.host_count();
  for (const WorkloadStep& step : m.scenario.workload) {
    if (const auto* c = std::get_if<CollectiveStep>(&step.step)) {
      auto pattern = collective_pattern(c->collective, hosts);
      if (!pattern) {
        ++e.unknown_steps;
        continue;
      }
      auto p =
          predict(m.topo, m.addresses, m.routes, *pattern, wire_cost("tcp", m.scenario.fabric.mtu));
      if (!p || p->seconds_per_byte == 0) {
        ++e.unknown_steps;
        continue;
      }
      for (uint64_t size : c->sizes)
        e.real_s += (c->iterations + kWarmupIterations) *
                    (p->latency_s + p->seconds_per_byte * double(size));
    } else if (const auto* i = std::get_if<IncastStep>(&step.step)) {
      e.real_s += 1e-9 * double(i->duration_ns);
    } else if (std::holds_alternative<ExecStep>(step.step) ||
               std::holds_alternative<ReplayStep>(step.step)) {
      ++e.unknown_steps;
    }
  }
  return e;
}

}  // namespace fabemu
