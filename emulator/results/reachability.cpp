#include "results/reachability.h"

#include <algorithm>
#include <cmath>

namespace fabemu {

int ReachabilityReport::answered() const {
  return static_cast<int>(
      std::count_if(pairs.begin(), pairs.end(), [](const PairResult& p) { return p.answered; }));
}

double ReachabilityReport::rtt_percentile(double p) const {
  std::vector<double> v;
  for (const auto& r : pairs)
    if (r.answered) v.push_back(r.rtt_us);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5);
  return v[std::min(idx, v.size() - 1)];
}

}  // namespace fabemu
