// The reaction point's rate machine (ebpf/dcqcn.h), the datapath's own code, against a
// reference that fires every timer one by one in floating point, as HPCC's ns-3 model does.
#include "ebpf/dcqcn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace fabemu {
namespace {

constexpr uint64_t kUs = 1000;

// HPCC's ns-3 DCQCN defaults at 100 Gbit/s: alpha 1 us, decrease 4 us, RP timer 300 us,
// g = 1/256, ai 5 Mbit/s x 4, hai 50 Mbit/s x 4, min 1 Gbit/s, F = 1, CNP interval 50 us.
fabemu_dcqcn_cfg defaults() {
  fabemu_dcqcn_cfg c{};
  c.line_bps = 100'000'000'000ull;
  c.min_bps = 1'000'000'000ull;
  c.ai_bps = 20'000'000;
  c.hai_bps = 200'000'000;
  c.alpha_ns = 1 * kUs;
  c.decrease_ns = 4 * kUs;
  c.rp_timer_ns = 300 * kUs;
  c.cnp_interval_ns = 50 * kUs;
  c.g = FABEMU_DCQCN_ONE / 256;
  c.fast_recovery = 1;
  return c;
}

// Every timer fired in turn from the first CNP on (alpha, then a decrease check due at the same
// moment, then an increase).
struct Reference {
  fabemu_dcqcn_cfg c;
  double rc = 0, rt = 0, alpha = 0, g = 0;
  bool started = false, alpha_cnp = false, decrease_cnp = false;
  uint64_t stage = 0;
  uint64_t t_alpha = 0, t_dec = 0, t_inc = std::numeric_limits<uint64_t>::max();

  explicit Reference(const fabemu_dcqcn_cfg& cfg)
      : c(cfg), rc(double(cfg.line_bps)), g(double(cfg.g) / double(FABEMU_DCQCN_ONE)) {}

  void advance(uint64_t now) {
    if (!started) return;
    for (;;) {
      const uint64_t next = std::min({t_alpha, t_dec, t_inc});
      if (next > now) return;
      if (next == t_alpha) {
        alpha = (1 - g) * alpha + (alpha_cnp ? g : 0);
        alpha_cnp = false;
        t_alpha += c.alpha_ns;
      } else if (next == t_dec) {
        if (decrease_cnp) {
          if (c.clamp_target || stage) rt = rc;
          rc = std::max(double(c.min_bps), rc * (1 - alpha / 2));
          stage = 0;
          decrease_cnp = false;
          t_inc = t_dec + c.rp_timer_ns;
        }
        t_dec += c.decrease_ns;
      } else {
        if (stage > c.fast_recovery)
          rt += double(c.hai_bps);
        else if (stage == c.fast_recovery)
          rt += double(c.ai_bps);
        rt = std::min(rt, double(c.line_bps));
        rc = (rc + rt) / 2;
        ++stage;
        t_inc += c.rp_timer_ns;
      }
    }
  }

  void cnp(uint64_t now) {
    advance(now);
    alpha_cnp = decrease_cnp = true;
    if (!started) {
      started = true;
      alpha = 1;
      alpha_cnp = false;
      t_alpha = now + c.alpha_ns;
      t_dec = now + c.decrease_ns + 1;
      rc = rt = double(c.line_bps);
    }
  }
};

TEST(Dcqcn, AQpWithoutCnpsSendsAtTheLineRate) {
  const fabemu_dcqcn_cfg c = defaults();
  fabemu_dcqcn_qp q{};
  EXPECT_EQ(fabemu_dcqcn_rate(&c, &q, 5'000'000), c.line_bps);
  // 1500-byte frames at 100 Gbit/s: 120 ns apart.
  EXPECT_EQ(fabemu_dcqcn_pace(&c, &q, 1000, 1500), 1000u);
  EXPECT_EQ(fabemu_dcqcn_pace(&c, &q, 1000, 1500), 1120u);
  EXPECT_EQ(fabemu_dcqcn_pace(&c, &q, 5000, 1500), 5000u);  // idle: from now
}

TEST(Dcqcn, TheFirstCnpHalvesTheRateAtTheNextDecreaseCheck) {
  const fabemu_dcqcn_cfg c = defaults();
  fabemu_dcqcn_qp q{};
  fabemu_dcqcn_cnp(&c, &q, 10 * kUs);
  EXPECT_EQ(fabemu_dcqcn_rate(&c, &q, 14 * kUs), c.line_bps);  // the check is at 14 us + 1 ns
  // alpha 1 -> (1 - g)^4 by then (four updates without a CNP): Rc = line (1 - alpha / 2).
  const double alpha = std::pow(1 - 1.0 / 256, 4);
  EXPECT_NEAR(double(fabemu_dcqcn_rate(&c, &q, 14 * kUs + 1)), 1e11 * (1 - alpha / 2), 1e5);
  EXPECT_EQ(q.decreases, 1u);
  EXPECT_EQ(q.target_bps, c.line_bps);  // Rt is not clamped in the first stage
}

// initial_alpha (ConnectX's initial_alpha_value): alpha at the first CNP, 1 by default.
TEST(Dcqcn, TheFirstCutTakesTheInitialAlpha) {
  fabemu_dcqcn_cfg c = defaults();
  c.initial_alpha = FABEMU_DCQCN_ONE / 4;
  fabemu_dcqcn_qp q{};
  fabemu_dcqcn_cnp(&c, &q, 0);
  const double alpha = 0.25 * std::pow(1 - 1.0 / 256, 4);
  EXPECT_NEAR(double(fabemu_dcqcn_rate(&c, &q, 4 * kUs + 1)), 1e11 * (1 - alpha / 2), 1e5);
}

TEST(Dcqcn, RecoversByFastRecoveryThenAdditiveThenHyperIncrease) {
  const fabemu_dcqcn_cfg c = defaults();
  fabemu_dcqcn_qp q{};
  fabemu_dcqcn_cnp(&c, &q, 0);
  const uint64_t cut = fabemu_dcqcn_rate(&c, &q, 4 * kUs + 1);
  ASSERT_LT(cut, c.line_bps);
  // 300 us later: fast recovery halfway back to Rt (the line rate).
  EXPECT_NEAR(double(fabemu_dcqcn_rate(&c, &q, 304 * kUs + 1)), (double(cut) + 1e11) / 2, 2);
  // A long idle: every increase replayed, the rate back at the line rate.
  EXPECT_EQ(fabemu_dcqcn_rate(&c, &q, 10'000'000'000ull), c.line_bps);
  // A CNP after the first fast recovery: Rt = Rc before the cut (no longer the first stage),
  // then Rt climbs by ai at the second increase after it and by hai at the third.
  fabemu_dcqcn_qp r{};
  fabemu_dcqcn_cnp(&c, &r, 0);
  const uint64_t recovered = fabemu_dcqcn_rate(&c, &r, 304 * kUs + 1);
  fabemu_dcqcn_cnp(&c, &r, 305 * kUs);
  fabemu_dcqcn_rate(&c, &r, 310 * kUs);
  ASSERT_EQ(r.decreases, 2u);
  const uint64_t decreased_at = 308 * kUs + 1;  // the check after the CNP
  EXPECT_EQ(r.target_bps, recovered);
  fabemu_dcqcn_rate(&c, &r, decreased_at + 300 * kUs);  // fast recovery: Rt stays
  EXPECT_EQ(r.target_bps, recovered);
  fabemu_dcqcn_rate(&c, &r, decreased_at + 600 * kUs);  // additive increase
  EXPECT_EQ(r.target_bps, recovered + c.ai_bps);
  fabemu_dcqcn_rate(&c, &r, decreased_at + 900 * kUs);  // hyper increase
  EXPECT_EQ(r.target_bps, recovered + c.ai_bps + c.hai_bps);
}

// byte_counter: every B bytes sent is an increase event of its own stage; fast recovery while
// both stages are below F, additive increase while one is not, hyper increase once both are
// above F (DCQCN's two counters).
TEST(Dcqcn, TheByteCounterRecoversBetweenTimersAndHyperIncreaseWaitsForBothStages) {
  fabemu_dcqcn_cfg c = defaults();
  c.byte_counter = 32768;
  fabemu_dcqcn_qp q{};
  auto send = [&](uint64_t now, uint64_t bytes) {
    for (uint64_t sent = 0; sent < bytes; sent += 8192) fabemu_dcqcn_pace(&c, &q, now, 8192);
  };
  fabemu_dcqcn_cnp(&c, &q, 0);
  const uint64_t cut = fabemu_dcqcn_rate(&c, &q, 4 * kUs + 1);
  ASSERT_LT(cut, c.line_bps);
  send(5 * kUs, 24576);  // not yet B
  EXPECT_EQ(q.rate_bps, cut);
  send(5 * kUs, 8192);  // B: fast recovery halfway to Rt, the line rate
  EXPECT_NEAR(double(q.rate_bps), (double(cut) + 1e11) / 2, 1);
  EXPECT_EQ(q.byte_stage, 1u);
  // A CNP after that increase: Rt = Rc, then the byte counter's rounds.
  fabemu_dcqcn_cnp(&c, &q, 6 * kUs);
  const uint64_t before = q.rate_bps;
  fabemu_dcqcn_rate(&c, &q, 8 * kUs + 1);
  ASSERT_EQ(q.decreases, 2u);
  EXPECT_EQ(q.target_bps, before);
  EXPECT_EQ(q.byte_stage, 0u);
  send(9 * kUs, 32768);  // fast recovery: Rt stays
  EXPECT_EQ(q.target_bps, before);
  send(9 * kUs, 32768);  // additive increase
  EXPECT_EQ(q.target_bps, before + c.ai_bps);
  send(9 * kUs, 32768);  // still additive: the timer's stage is 0
  EXPECT_EQ(q.target_bps, before + 2 * c.ai_bps);
  // The timer's rounds: additive while its stage is at most F, then hyper increase.
  fabemu_dcqcn_rate(&c, &q, 308 * kUs + 1);
  EXPECT_EQ(q.target_bps, before + 3 * c.ai_bps);
  fabemu_dcqcn_rate(&c, &q, 608 * kUs + 1);
  EXPECT_EQ(q.target_bps, before + 4 * c.ai_bps);
  fabemu_dcqcn_rate(&c, &q, 908 * kUs + 1);
  EXPECT_EQ(q.target_bps, before + 4 * c.ai_bps + c.hai_bps);
  // Without the byte counter the same bytes move nothing.
  c.byte_counter = 0;
  fabemu_dcqcn_qp r{};
  fabemu_dcqcn_cnp(&c, &r, 0);
  const uint64_t still = fabemu_dcqcn_rate(&c, &r, 4 * kUs + 1);
  for (int i = 0; i < 64; ++i) fabemu_dcqcn_pace(&c, &r, 5 * kUs, 8192);
  EXPECT_EQ(r.rate_bps, still);
}

TEST(Dcqcn, MatchesTimersFiredOneByOneOverRandomCnps) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    fabemu_dcqcn_cfg c = defaults();
    c.clamp_target = trial % 2;
    c.fast_recovery = trial % 3 == 0 ? 5 : 1;
    Reference ref(c);
    fabemu_dcqcn_qp q{};
    uint64_t now = 0;
    double worst = 0;
    for (int step = 0; step < 3000; ++step) {
      // Bursts of CNPs (tens of us apart), pauses of up to 3 ms between them.
      now += step % 40 < 30 ? 1 + rng() % (60 * kUs) : rng() % (3000 * kUs);
      if (rng() % 3 == 0) {
        fabemu_dcqcn_cnp(&c, &q, now);
        ref.cnp(now);
      } else {
        const double got = double(fabemu_dcqcn_rate(&c, &q, now));
        ref.advance(now);
        const double want = ref.started ? ref.rc : double(c.line_bps);
        worst = std::max(worst, std::abs(got - want) / want);
      }
    }
    EXPECT_LT(worst, 1e-4) << "trial " << trial;
    EXPECT_NEAR(double(q.alpha) / double(FABEMU_DCQCN_ONE), ref.alpha, 1e-4);
  }
}

TEST(Dcqcn, PacesAQpAtItsCurrentRate) {
  const fabemu_dcqcn_cfg c = defaults();
  fabemu_dcqcn_qp q{};
  fabemu_dcqcn_cnp(&c, &q, 0);
  const uint64_t now = 5 * kUs;
  const uint64_t rate = fabemu_dcqcn_rate(&c, &q, now);
  const uint64_t first = fabemu_dcqcn_pace(&c, &q, now, 4096);
  const uint64_t second = fabemu_dcqcn_pace(&c, &q, now, 4096);
  EXPECT_EQ(first, now);
  EXPECT_EQ(second - first, 4096ull * 8'000'000'000ull / rate);
  EXPECT_EQ(q.packets, 2u);
}

TEST(Dcqcn, NeverFallsBelowTheMinimumRate) {
  const fabemu_dcqcn_cfg c = defaults();
  fabemu_dcqcn_qp q{};
  for (uint64_t t = 0; t < 2'000 * kUs; t += 3 * kUs) fabemu_dcqcn_cnp(&c, &q, t);
  EXPECT_EQ(fabemu_dcqcn_rate(&c, &q, 2'000 * kUs), c.min_bps);
}

}  // namespace
}  // namespace fabemu
