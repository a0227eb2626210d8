// next_block(): cool-down lengths, their growth across strikes, and jitter bounds.
#include <gtest/gtest.h>

#include "scheduler_fixtures.hpp"

namespace kfleet::sched {
namespace {

using testing::kNow;

store::RegionBlock stockout(const BlockPolicy& p, const std::optional<store::RegionBlock>& prev,
                            TimeMs now, double u = 0.5) {
  return next_block(p, prev, "simulated", "us-east-1", "L4", "stockout", "no capacity", now, u);
}

TEST(NextBlock, FirstStockoutUsesTheBase) {
  BlockPolicy p;
  const auto b = stockout(p, std::nullopt, kNow);
  EXPECT_EQ(b.strikes, 1);
  EXPECT_EQ(b.since_ms, kNow);
  EXPECT_EQ(b.until_ms, kNow + p.stockout_base_ms);  // u = 0.5: no jitter
  EXPECT_EQ(b.provider, "simulated");
  EXPECT_EQ(b.region, "us-east-1");
  EXPECT_EQ(b.gpu_class, "L4");
  EXPECT_EQ(b.kind, "stockout");
  EXPECT_EQ(b.reason, "no capacity");
}

TEST(NextBlock, RepeatedStockoutsDoubleUpToTheCap) {
  BlockPolicy p;
  std::optional<store::RegionBlock> prev;
  TimeMs now = kNow;
  std::vector<TimeMs> lengths;
  for (int i = 0; i < 8; ++i) {
    prev = stockout(p, prev, now);
    lengths.push_back(prev->until_ms - prev->since_ms);
    EXPECT_EQ(prev->strikes, i + 1);
    now = prev->until_ms + 1;  // fails again right after the block ends
  }
  EXPECT_EQ(lengths[0], 60'000);
  EXPECT_EQ(lengths[1], 120'000);
  EXPECT_EQ(lengths[2], 240'000);
  EXPECT_EQ(lengths[4], 960'000);
  EXPECT_EQ(lengths[5], p.stockout_max_ms);
  EXPECT_EQ(lengths[7], p.stockout_max_ms);
}

TEST(NextBlock, StrikesResetAfterAQuietSpell) {
  BlockPolicy p;
  auto first = stockout(p, std::nullopt, kNow);
  auto second = stockout(p, first, first.until_ms + 10);
  EXPECT_EQ(second.strikes, 2);
  const TimeMs long_after = second.until_ms + 10 * (second.until_ms - second.since_ms);
  EXPECT_EQ(stockout(p, second, long_after).strikes, 1);
}

TEST(NextBlock, JitterStaysWithinBounds) {
  BlockPolicy p;
  p.jitter = 0.2;
  for (double u : {0.0, 0.1, 0.37, 0.5, 0.73, 0.999}) {
    const auto b = stockout(p, std::nullopt, kNow, u);
    const TimeMs len = b.until_ms - b.since_ms;
    EXPECT_GE(len, static_cast<TimeMs>(p.stockout_base_ms * 0.8)) << u;
    EXPECT_LE(len, static_cast<TimeMs>(p.stockout_base_ms * 1.2)) << u;
  }
  EXPECT_LT(stockout(p, std::nullopt, kNow, 0.0).until_ms,
            stockout(p, std::nullopt, kNow, 0.9).until_ms);
}

TEST(NextBlock, FixedKinds) {
  BlockPolicy p;
  p.jitter = 0;
  const auto u = next_block(p, std::nullopt, "simulated", "r", "", "unsupported", "x", kNow, 0.3);
  EXPECT_EQ(u.until_ms - kNow, p.unsupported_ms);
  const auto q = next_block(p, std::nullopt, "simulated", "r", "", "quota", "x", kNow, 0.3);
  EXPECT_EQ(q.until_ms - kNow, p.quota_ms);
  const auto f = next_block(p, std::nullopt, "simulated", "r", "", "fatal", "x", kNow, 0.3);
  EXPECT_EQ(f.until_ms - kNow, p.quota_ms);
  EXPECT_EQ(f.kind, "fatal");
}

}  // namespace
}  // namespace kfleet::sched
