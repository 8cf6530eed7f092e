// Tests of the LinkShape -> datapath config conversion (no kernel involved).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "scenario/link_shape_text.h"
#include "shaping/link_cfg.h"
#include "util/prng.h"

namespace fabemu {
namespace {

TEST(ShaperCfg, EmptyShapeLimitsNothing) {
  fabemu_link_cfg cfg = to_cfg(LinkShape{}, 7, false);
  EXPECT_EQ(cfg.rate_bps, 0u);
  EXPECT_EQ(cfg.delay_ns, 0u);
  EXPECT_EQ(cfg.jitter_ns, 0u);
  EXPECT_EQ(cfg.queue_ns, 0u);  // no rate: no queue can form, so no default limit
  EXPECT_EQ(cfg.queue_bytes, 0u);
  EXPECT_EQ(cfg.ecn_threshold_ns, 0u);
  EXPECT_EQ(cfg.loss, 0u);
  EXPECT_EQ(cfg.flags, 0u);
  EXPECT_EQ(cfg.seed, 7u);
}

TEST(ShaperCfg, CopiesEveryField) {
  LinkShape s;
  s.rate_bps = 400'000'000'000ull;  // beyond 32 bits
  s.delay_ns = 20'000;
  s.jitter_ns = 3'000;
  s.reorder = false;
  s.loss = 0.01;
  s.queue_ns = 200'000;
  s.queue_bytes = 5'000'000;
  s.ecn_threshold_ns = 40'000;
  fabemu_link_cfg cfg = to_cfg(s, 42, false);
  EXPECT_EQ(cfg.rate_bps, 400'000'000'000ull);
  EXPECT_EQ(cfg.delay_ns, 20'000u);
  EXPECT_EQ(cfg.jitter_ns, 3'000u);
  EXPECT_EQ(cfg.queue_ns, 200'000u);
  EXPECT_EQ(cfg.queue_bytes, 5'000'000u);
  EXPECT_EQ(cfg.ecn_threshold_ns, 40'000u);
  EXPECT_EQ(cfg.loss, probability_u32(0.01));
  EXPECT_EQ(cfg.flags, static_cast<uint32_t>(FABEMU_LINK_NO_REORDER));
  EXPECT_EQ(cfg.seed, 42u);
}

TEST(ShaperCfg, FlagsFollowDownReorderAndPolicer) {
  LinkShape s;
  s.down = true;
  EXPECT_EQ(to_cfg(s, 0, false).flags, static_cast<uint32_t>(FABEMU_LINK_DOWN));
  s.down = false;
  s.reorder = true;
  EXPECT_EQ(to_cfg(s, 0, false).flags, 0u);
  EXPECT_EQ(to_cfg(s, 0, true).flags, static_cast<uint32_t>(FABEMU_LINK_POLICER));
}

TEST(ShaperCfg, RateWithoutQueueGetsTheDefaultQueue) {
  LinkShape s;
  s.rate_bps = 10'000'000;
  EXPECT_EQ(to_cfg(s, 0, true).queue_ns, kDefaultQueueNs);
  s.queue_bytes = 100'000;  // an explicit limit of either kind replaces the default
  EXPECT_EQ(to_cfg(s, 0, true).queue_ns, 0u);
  EXPECT_EQ(to_cfg(s, 0, true).queue_bytes, 100'000u);
}

TEST(ShaperCfg, AbsurdRatesAreClampedToWhatTheDatapathComputesWith) {
  LinkShape s;
  s.rate_bps = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(to_cfg(s, 0, false).rate_bps, 1ull << 60);
}

TEST(ShaperCfg, ProbabilitiesAreFractionsOfTwoToThe32) {
  EXPECT_EQ(probability_u32(0), 0u);
  EXPECT_EQ(probability_u32(-0.5), 0u);
  EXPECT_EQ(probability_u32(std::nan("")), 0u);
  EXPECT_EQ(probability_u32(0.5), 1u << 31);
  EXPECT_EQ(probability_u32(0.25), 1u << 30);
  EXPECT_EQ(probability_u32(1), FABEMU_PROB_ALWAYS);
  EXPECT_EQ(probability_u32(7), FABEMU_PROB_ALWAYS);
  // Just below certainty stays a probability.
  EXPECT_EQ(probability_u32(1 - 1e-12), FABEMU_PROB_ALWAYS - 1);
  // 0.5% of 2^32, to the nearest integer.
  EXPECT_EQ(probability_u32(0.005), 21474836u);
  for (double p : {0.0, 1e-6, 0.001, 0.1, 0.5, 0.999, 1.0})
    EXPECT_NEAR(probability_of(probability_u32(p)), p, 1e-9) << p;
}

TEST(ShaperCfg, GilbertElliottReplacesBernoulli) {
  fabemu_link_cfg cfg = to_cfg(LinkShape{}, 0, false);
  set_gilbert_elliott(cfg, {.p = 0.01, .r = 0.25, .loss_bad = 1, .loss_good = 0});
  EXPECT_TRUE(cfg.flags & FABEMU_LINK_GE);
  EXPECT_EQ(cfg.ge_p, probability_u32(0.01));
  EXPECT_EQ(cfg.ge_r, 1u << 30);
  EXPECT_EQ(cfg.ge_loss_bad, FABEMU_PROB_ALWAYS);
  EXPECT_EQ(cfg.ge_loss_good, 0u);
}

TEST(ShaperCfg, ToShapeShowsWhatIsEnforced) {
  LinkShape s;
  s.rate_bps = 25'000'000'000ull;
  s.delay_ns = 2'000;
  s.loss = 0.5;
  s.reorder = false;
  s.down = true;
  LinkShape back = to_shape(to_cfg(s, 1, false));
  EXPECT_EQ(back.rate_bps, s.rate_bps);
  EXPECT_EQ(back.delay_ns, s.delay_ns);
  EXPECT_EQ(back.loss, 0.5);
  EXPECT_EQ(back.reorder, false);
  EXPECT_EQ(back.down, true);
  EXPECT_EQ(back.queue_ns, kDefaultQueueNs);  // the default the link really has
  EXPECT_FALSE(back.jitter_ns);
  EXPECT_FALSE(back.ecn_threshold_ns);
  EXPECT_TRUE(to_shape(to_cfg(LinkShape{}, 1, false)).empty());
}

TEST(ShaperCfg, RedEcnGoesThereAndBackAndOffIsNothing) {
  LinkShape s;
  s.ecn = RedEcn{400'000, 1'600'000, 0.2};
  fabemu_link_cfg cfg = to_cfg(s, 1, false);
  EXPECT_EQ(cfg.ecn_kmin_bytes, 400'000u);
  EXPECT_EQ(cfg.ecn_kmax_bytes, 1'600'000u);
  EXPECT_EQ(cfg.ecn_pmax, probability_u32(0.2));
  LinkShape back = to_shape(cfg);
  ASSERT_TRUE(back.ecn);
  EXPECT_EQ(back.ecn->kmax_bytes, 1'600'000u);
  EXPECT_NEAR(back.ecn->pmax, 0.2, 1e-9);
  s.ecn = RedEcn{};  // a live change's off
  EXPECT_EQ(to_cfg(s, 1, false).ecn_kmax_bytes, 0u);
  EXPECT_FALSE(to_shape(to_cfg(s, 1, false)).ecn);
}

TEST(ShaperCfg, LinkSeedsAreStableAndDistinct) {
  EXPECT_EQ(link_seed(42, "leaf1>spine2"), link_seed(42, "leaf1>spine2"));
  std::set<uint64_t> seeds;
  for (uint64_t scenario : {1, 2, 42})
    for (const char* d : {"leaf1>spine2", "spine2>leaf1", "h1>leaf1", "leaf1>h1"})
      seeds.insert(link_seed(scenario, d));
  EXPECT_EQ(seeds.size(), 12u);
  // A fixed value: the seed of a link must not change between fabemu versions, or a scenario's
  // loss pattern would.
  EXPECT_EQ(link_seed(42, "leaf1>spine2"), 13355336517281704425ull);
}

TEST(ShaperCfg, BurstLossRoundTripsAndReplacesBernoulli) {
  LinkShape s;
  s.loss_burst = BurstLoss{0.01, 0.25, 1, 0};
  fabemu_link_cfg cfg = to_cfg(s, 1, false);
  EXPECT_TRUE(cfg.flags & FABEMU_LINK_GE);
  EXPECT_EQ(cfg.loss, 0u);
  LinkShape back = to_shape(cfg);
  ASSERT_TRUE(back.loss_burst);
  EXPECT_NEAR(back.loss_burst->p, 0.01, 1e-9);
  EXPECT_NEAR(back.loss_burst->r, 0.25, 1e-9);
  EXPECT_FALSE(back.loss);
  // A later level that sets plain loss replaces burst loss, and the other way round.
  LinkShape over;
  over.loss = 0.02;
  back.merge(over);
  EXPECT_EQ(back.loss, 0.02);
  EXPECT_FALSE(back.loss_burst);
}

TEST(ShaperCfg, FqLimitsHoldWhatTheLinkModelLetsWait) {
  // Unshaped and small shapes get fq's default horizon and generous packet limits.
  FqParams idle = fq_params_for({});
  EXPECT_EQ(idle.horizon_ns, 10'000'000'000ull);
  EXPECT_GE(idle.limit, 100'000u);
  EXPECT_EQ(idle.flow_limit, idle.limit);  // one elephant flow may fill the queue
  // 100 Gbit/s with 10 ms of queue and 20 ms of delay: 30 ms of 256-byte packets, twice.
  LinkShape big;
  big.rate_bps = 100'000'000'000ull;
  big.queue_ns = 10'000'000;
  big.delay_ns = 20'000'000;
  FqParams p = fq_params_for(big);
  EXPECT_GE(p.limit, uint32_t(0.03 * 100e9 / 2048 * 2) - 1);
  // A delay longer than fq's default horizon widens it.
  LinkShape slow;
  slow.delay_ns = 8'000'000'000ull;
  EXPECT_GE(fq_params_for(slow).horizon_ns, 16'000'000'000ull);
}

TEST(ShaperCfg, ShapesPrintInTheScenarioSpelling) {
  LinkShape s;
  s.rate_bps = 25'000'000'000ull;
  s.delay_ns = 2'000;
  s.loss = 0.005;
  s.queue_bytes = 64 << 10;
  EXPECT_EQ(s.str(), "rate 25gbit, delay 2us, loss 0.5%, queue 64K");
  EXPECT_EQ(LinkShape{}.str(), "");
}

TEST(ShaperCfg, CorruptAndDuplicateRoundTripAndParseLikeLoss) {
  LinkShape s;
  ASSERT_TRUE(set_link_shape_field(s, "corrupt", "0.1%", 1500).ok());
  ASSERT_TRUE(set_link_shape_field(s, "duplicate", "0.5", 1500).ok());
  EXPECT_FALSE(set_link_shape_field(s, "duplicate", "150%", 1500).ok());
  const fabemu_link_cfg cfg = to_cfg(s, 1, false);
  EXPECT_EQ(cfg.corrupt, probability_u32(0.001));
  EXPECT_EQ(cfg.duplicate, probability_u32(0.5));
  EXPECT_EQ(cfg.loss, 0u) << "damage is not loss";
  const LinkShape back = to_shape(cfg);
  EXPECT_NEAR(back.corrupt.value_or(0), 0.001, 1e-9);
  EXPECT_NEAR(back.duplicate.value_or(0), 0.5, 1e-9);
  EXPECT_EQ(back.str(), "corrupt 0.1%, duplicate 50%");
  // A live change's "off" turns it off.
  LinkShape off;
  ASSERT_TRUE(set_link_shape_field(off, "corrupt", "off", 1500, ShapeSyntax::Change).ok());
  LinkShape merged = back;
  merged.merge(off);
  EXPECT_EQ(to_cfg(merged, 1, false).corrupt, 0u);
}

}  // namespace
}  // namespace fabemu
