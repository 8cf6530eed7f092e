// The all-pairs reachability check's answers (runtime/reachability.h asks them).
#pragma once

#include <vector>

namespace fabemu {

struct PairResult {
  int src = -1, dst = -1;  // node ids
  bool answered = false;
  double rtt_us = 0;
};

struct ReachabilityReport {
  std::vector<PairResult> pairs;
  int answered() const;
  double rtt_percentile(double p) const;  // over answered pairs, microseconds
};

}  // namespace fabemu
