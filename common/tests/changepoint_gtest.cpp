// Change-point detection on synthetic series with known shifts.
#include <random>

#include <gtest/gtest.h>

#include "kfleet/common/changepoint.hpp"

namespace kfleet::stats {
namespace {

std::vector<double> series(const std::vector<std::pair<int, double>>& regimes, double noise_pct,
                           std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, noise_pct / 100);
  std::vector<double> out;
  for (auto [count, mean] : regimes)
    for (int i = 0; i < count; ++i) out.push_back(mean * (1 + n(rng)));
  return out;
}

TEST(ChangePoint, FlatNoisySeriesHasNone) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed)
    EXPECT_TRUE(detect_change_points(series({{30, 100}}, 0.5, seed)).empty()) << seed;
}

TEST(ChangePoint, FindsAFivePercentStepWhereItIs) {
  auto cps = detect_change_points(series({{15, 100}, {10, 105}}, 0.5, 7));
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 15u);
  EXPECT_NEAR(cps[0].shift_pct, 5.0, 1.0);
  EXPECT_LT(cps[0].p_value, 0.05);
}

TEST(ChangePoint, FindsTwoShiftsUpThenDown) {
  auto cps = detect_change_points(series({{12, 100}, {12, 110}, {12, 95}}, 0.5, 3));
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps[0].index, 12u);
  EXPECT_EQ(cps[1].index, 24u);
  EXPECT_GT(cps[0].shift_pct, 0);
  EXPECT_LT(cps[1].shift_pct, 0);
}

TEST(ChangePoint, ShiftAtTheLastPointsIsFoundWithMinSegment) {
  auto cps = detect_change_points(series({{10, 100}, {2, 106}}, 0.3, 11));
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 10u);
}

// min_segment points on each side are enough: a series of exactly twice that, split in its
// middle, has its change found, and a split one point nearer an end is not considered.
TEST(ChangePoint, ASegmentOfExactlyMinSegmentPointsCounts) {
  ChangePointOptions o;
  o.min_segment = 6;
  auto cps = detect_change_points(series({{6, 100}, {6, 106}}, 0.2, 13), o);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 6u);
  // A shift after 5 points, or 5 before the end, is nearer an end than min_segment: no split
  // may isolate it there.
  for (const auto& c : detect_change_points(series({{5, 100}, {7, 106}}, 0.2, 13), o)) EXPECT_EQ(c.index, 6u);
  for (const auto& c : detect_change_points(series({{7, 100}, {5, 106}}, 0.2, 13), o)) EXPECT_EQ(c.index, 6u);
}

TEST(ChangePoint, ShiftBelowTheFloorIsIgnoredAndShortSeriesAreSafe) {
  EXPECT_TRUE(detect_change_points(series({{15, 100}, {15, 100.2}}, 0.01, 2)).empty());
  EXPECT_TRUE(detect_change_points({}).empty());
  EXPECT_TRUE(detect_change_points({1.0, 2.0, 3.0}).empty());
}

}  // namespace
}  // namespace kfleet::stats
