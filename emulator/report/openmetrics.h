// A lab's counters in Prometheus' exposition formats (text 0.0.4, or OpenMetrics 1.0 when the
// scraper asks for it): `fabemu metrics` serves this. Names carry the `fabemu_` prefix, counts
// are as counted, times and rates are the real fabric's; docs/observability.md lists them.
#pragma once

#include <functional>
#include <string>

#include "plan/plan.h"
#include "results/telemetry.h"

namespace fabemu {

struct MetricsInput {
  const LabModel& model;
  const TelemetrySample& sample;  // runtime/telemetry's read, in the real fabric's units
  std::string lab, shaping;
  double fabric_s = 0;      // the real fabric's seconds since the lab's epoch
  double read_seconds = 0;  // how long reading the counters took
  // Whether a direction (2 * link + b_to_a) is this machine's to report (a lab across
  // machines: each exporter serves the directions leaving its nodes).
  std::function<bool(size_t)> local;
  std::string machine;  // a lab across machines: this machine's name (a `machine` label)
};

std::string metrics_text(const MetricsInput& in, bool openmetrics);

}  // namespace fabemu
