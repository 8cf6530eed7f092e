// An incast's receiver total from its link's byte counter: flows that took turns do not add up
// past the link, set-up before the data and a straggler after it do not stretch the window, and
// a stall in the middle shows as the idle link it is.
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/incast.h"

namespace fabemu {
namespace {

using Samples = std::vector<std::pair<double, uint64_t>>;

// 25 Mbit/s (3.125 MB/s) from `from` to `to` seconds, sampled every 10 ms over [0, end].
Samples steady(double from, double to, double end, uint64_t base = 1000) {
  Samples s;
  for (int k = 0; k * 0.01 <= end + 1e-9; ++k) {
    const double t = k * 0.01;
    const double active = std::clamp(t, from, to) - from;
    s.emplace_back(t, base + static_cast<uint64_t>(active * 3.125e6));
  }
  return s;
}

TEST(IncastRate, SetUpBeforeTheDataDoesNotCount) {
  EXPECT_NEAR(received_rate(steady(1.0, 3.0, 4.0), 1), 25e6, 0.3e6);
}

TEST(IncastRate, AStragglerAfterTheDataDoesNotStretchTheWindow) {
  Samples s = steady(0.2, 2.2, 2.5);
  // 0.5% more bytes a second later (a flow that waited out an RTO).
  s.emplace_back(3.5, s.back().second + 31'000);
  EXPECT_NEAR(received_rate(s, 1), 25e6, 0.5e6);
}

TEST(IncastRate, AStallInTheMiddleIsTheIdleLinkItIs) {
  // 1 s of data, 1 s of nothing, 1 s of data.
  Samples s = steady(0, 1, 1);
  const uint64_t mid = s.back().second;
  for (int k = 1; k <= 200; ++k) {
    const double t = 1 + k * 0.01;
    s.emplace_back(t, mid + static_cast<uint64_t>(std::max(0.0, t - 2) * 3.125e6));
  }
  EXPECT_NEAR(received_rate(s, 1), 25e6 * 2 / 3, 0.5e6);
}

TEST(IncastRate, ADilatedLabReportsTheRealFabricsRate) {
  EXPECT_NEAR(received_rate(steady(0.5, 2.5, 3), 1000), 25e9, 0.3e9);
}

TEST(IncastRate, NothingArrivedIsZero) {
  EXPECT_EQ(received_rate({}, 1), 0);
  EXPECT_EQ(received_rate({{0, 5}}, 1), 0);
  EXPECT_EQ(received_rate({{0, 5}, {1, 5}}, 1), 0);
}

}  // namespace
}  // namespace fabemu
