#include "kfleet/common/stats.hpp"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace kfleet::stats {
namespace {

// Timing-like samples: mean * (1 + rel_noise * N(0,1)), from a fixed generator so each test is
// reproducible (Box-Muller by hand: std::normal_distribution differs between libraries).
std::vector<double> noisy(double mean, double rel_noise, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  auto uniform = [&] { return (static_cast<double>(g() >> 11) + 0.5) * 0x1.0p-53; };
  std::vector<double> xs;
  for (std::size_t i = 0; i < n; ++i) {
    const double z = std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
    xs.push_back(mean * (1 + rel_noise * z));
  }
  return xs;
}

TEST(Quantile, InterpolatesLinearlyBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(quantile({10, 20}, 0.25), 12.5);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
}

TEST(Summarize, ComputesOrderStatisticsAndSampleStdev) {
  const Summary s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_NEAR(s.stdev, std::sqrt(2.5), 1e-12);
  EXPECT_DOUBLE_EQ(s.p10, 1.4);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);
  EXPECT_NEAR(s.rel_stdev_pct(), 100 * std::sqrt(2.5) / 3, 1e-9);
  EXPECT_EQ(summarize({}).n, 0u);
}

TEST(Decide, ClassifiesIntervalsAgainstThreshold) {
  EXPECT_EQ(decide(5.0, 7.0, 1.0), "regressed");
  EXPECT_EQ(decide(-7.0, -5.0, 1.0), "improved");
  EXPECT_EQ(decide(-0.4, 0.6, 1.0), "same");
  EXPECT_EQ(decide(0.5, 1.5, 1.0), "inconclusive");
  EXPECT_EQ(decide(-3.0, 3.0, 1.0), "inconclusive");
  // On the threshold: a change must clear it to count, and an interval that reaches it is same.
  EXPECT_EQ(decide(1.0, 2.0, 1.0), "inconclusive");
  EXPECT_EQ(decide(-2.0, -1.0, 1.0), "inconclusive");
  EXPECT_EQ(decide(-1.0, 1.0, 1.0), "same");
  EXPECT_EQ(decide(-1.0, 1.0, -1.0), "same");  // the threshold's sign does not matter
}

TEST(CompareSamples, IdenticalDistributionsAreSame) {
  const auto base = noisy(100, 0.003, 40, 1);
  const auto cand = noisy(100, 0.003, 40, 2);
  const PerfComparison c = compare_samples(cand, base, 1.0);
  EXPECT_EQ(c.verdict, "same");
  EXPECT_LT(std::abs(c.delta_pct), 0.5);
  EXPECT_LE(c.ci_low_pct, c.delta_pct);
  EXPECT_GE(c.ci_high_pct, c.delta_pct);
}

TEST(CompareSamples, SixPercentSlowerIsRegressedWithIntervalAroundSix) {
  const auto base = noisy(100, 0.003, 30, 3);
  const auto cand = noisy(106, 0.003, 30, 4);
  const PerfComparison c = compare_samples(cand, base, 1.0);
  EXPECT_EQ(c.verdict, "regressed");
  EXPECT_NEAR(c.delta_pct, 6.0, 0.3);
  EXPECT_GT(c.ci_low_pct, 5.5);
  EXPECT_LT(c.ci_high_pct, 6.5);
  EXPECT_EQ(c.n, 30u);
}

TEST(CompareSamples, FasterCandidateIsImproved) {
  const PerfComparison c =
      compare_samples(noisy(95, 0.003, 30, 5), noisy(100, 0.003, 30, 6), 1.0);
  EXPECT_EQ(c.verdict, "improved");
  EXPECT_NEAR(c.delta_pct, -5.0, 0.3);
}

TEST(CompareRounds, TwoPercentSlowerIsRegressedAtOnePercent) {
  const PerfComparison c = compare_rounds(noisy(1.02, 0.003, 20, 7), 1.0);
  EXPECT_EQ(c.verdict, "regressed");
  EXPECT_NEAR(c.delta_pct, 2.0, 0.3);
  EXPECT_GT(c.ci_low_pct, 1.0);
}

TEST(CompareRounds, HalfPercentDifferenceIsSameAtOnePercent) {
  const PerfComparison c = compare_rounds(noisy(1.005, 0.002, 30, 8), 1.0);
  EXPECT_EQ(c.verdict, "same");
  EXPECT_NEAR(c.delta_pct, 0.5, 0.2);
  EXPECT_GE(c.ci_low_pct, -1.0);
  EXPECT_LE(c.ci_high_pct, 1.0);
}

TEST(CompareRounds, NoisySmallSampleIsInconclusive) {
  const PerfComparison c = compare_rounds(noisy(1.02, 0.10, 5, 9), 1.0);
  EXPECT_EQ(c.verdict, "inconclusive");
  EXPECT_LT(c.ci_low_pct, c.ci_high_pct);
  EXPECT_GT(c.ci_high_pct - c.ci_low_pct, 2.0);
}

TEST(CompareRounds, TooFewRoundsNeverGiveAVerdict) {
  EXPECT_EQ(compare_rounds({1.5, 1.5}, 1.0).verdict, "inconclusive");
  EXPECT_EQ(compare_rounds({}, 1.0).verdict, "inconclusive");
  EXPECT_EQ(compare_rounds({1.1, NAN, 1.1, 1.1}, 1.0).verdict, "inconclusive");
}

// Three rounds are the fewest that give a verdict; an inconclusive one still reports its point
// estimate, and the interval narrows with the confidence asked for.
TEST(CompareRounds, ThreeRoundsDecideAndTheIntervalFollowsTheConfidence) {
  EXPECT_EQ(compare_rounds({1.05, 1.06, 1.07}, 1.0).verdict, "regressed");
  const PerfComparison two = compare_rounds({1.04, 1.06}, 1.0);
  EXPECT_EQ(two.verdict, "inconclusive");
  EXPECT_NEAR(two.delta_pct, 5.0, 1e-9);
  EXPECT_EQ(two.n, 2u);
  const auto ratios = noisy(1.0, 0.01, 40, 11);
  const PerfComparison wide = compare_rounds(ratios, 1.0, 0.99), narrow = compare_rounds(ratios, 1.0, 0.5);
  EXPECT_LT(narrow.ci_high_pct, wide.ci_high_pct);
  EXPECT_GT(narrow.ci_low_pct, wide.ci_low_pct);
  EXPECT_LT(narrow.ci_low_pct, narrow.ci_high_pct);
}

// Samples of two sizes: n is the smaller, which is also what the minimum for a verdict counts;
// a baseline whose median is 0 gives no ratio at all.
TEST(CompareSamples, CountsTheSmallerSideAndRefusesAZeroBaseline) {
  const PerfComparison c = compare_samples({106, 106, 106}, noisy(100, 0.001, 30, 12), 1.0);
  EXPECT_EQ(c.n, 3u);
  EXPECT_EQ(c.verdict, "regressed");
  EXPECT_EQ(compare_samples({106, 106}, noisy(100, 0.001, 30, 12), 1.0).verdict, "inconclusive");
  const PerfComparison zero = compare_samples({1, 1, 1, 1}, {0, 0, 0, 0}, 1.0);
  EXPECT_EQ(zero.verdict, "inconclusive");
  EXPECT_EQ(zero.delta_pct, 0);
}

// Confidence outside (0, 1) or no resamples is a caller's bug, stopped at once.
TEST(CompareRoundsDeathTest, RefusesParametersOutsideTheirRange) {
  const std::vector<double> r = {1, 1, 1};
  EXPECT_DEATH(compare_rounds(r, 1.0, 0.0), "");
  EXPECT_DEATH(compare_rounds(r, 1.0, 1.0), "");
  EXPECT_DEATH(compare_rounds(r, 1.0, 0.95, 0), "");
  EXPECT_EQ(compare_rounds(r, 1.0, 0.95, 1).verdict, "same");
}

TEST(CompareToValue, MeasuresAgainstAFixedBaseline) {
  const PerfComparison c = compare_to_value(noisy(42.176 * 1.06, 0.003, 25, 10), 42.176, 1.0);
  EXPECT_EQ(c.verdict, "regressed");
  EXPECT_NEAR(c.delta_pct, 6.0, 0.3);
  EXPECT_EQ(compare_to_value({1, 2, 3}, 0.0, 1.0).verdict, "inconclusive");
}

TEST(Bootstrap, DeterministicForASeedAndSensitiveToIt) {
  const auto cand = noisy(101, 0.02, 15, 11);
  const auto base = noisy(100, 0.02, 15, 12);
  const PerfComparison a = compare_samples(cand, base, 1.0, 0.95, 2000, 42);
  const PerfComparison b = compare_samples(cand, base, 1.0, 0.95, 2000, 42);
  const PerfComparison c = compare_samples(cand, base, 1.0, 0.95, 2000, 43);
  EXPECT_EQ(a.verdict, b.verdict);
  EXPECT_DOUBLE_EQ(a.ci_low_pct, b.ci_low_pct);
  EXPECT_DOUBLE_EQ(a.ci_high_pct, b.ci_high_pct);
  EXPECT_DOUBLE_EQ(a.delta_pct, c.delta_pct);  // the point estimate does not depend on the seed
  EXPECT_TRUE(a.ci_low_pct != c.ci_low_pct || a.ci_high_pct != c.ci_high_pct);
}

// A kernel at 100 µs against a reference at 141 µs: 1.41x, the interval around it and inside
// what the two noises allow; the same samples the other way round give the inverse.
TEST(Speedup, IsTheReferenceMedianOverTheKernelMedianWithABootstrapInterval) {
  const auto kernel = noisy(100, 0.005, 40, 21);
  const auto reference = noisy(141, 0.005, 40, 22);
  const Speedup s = speedup(kernel, reference);
  ASSERT_TRUE(s.ok);
  EXPECT_NEAR(s.point, 1.41, 0.01);
  ASSERT_TRUE(s.ci_low && s.ci_high);
  EXPECT_LT(*s.ci_low, s.point);
  EXPECT_GT(*s.ci_high, s.point);
  EXPECT_GT(*s.ci_low, 1.39);
  EXPECT_LT(*s.ci_high, 1.43);
  EXPECT_EQ(s.n, 40u);
  const Speedup back = speedup(reference, kernel);
  EXPECT_NEAR(back.point, 1 / s.point, 1e-12);
  EXPECT_LT(*back.ci_high, 1.0);
}

// The interval widens with the noise of either side: the reference's spread is not ignored.
TEST(Speedup, ANoisyReferenceWidensTheInterval) {
  const auto kernel = noisy(100, 0.002, 30, 31);
  const Speedup quiet = speedup(kernel, noisy(93, 0.002, 30, 32));
  const Speedup loud = speedup(kernel, noisy(93, 0.04, 30, 32));
  ASSERT_TRUE(quiet.ci_low && loud.ci_low);
  EXPECT_GT(*loud.ci_high - *loud.ci_low, 4 * (*quiet.ci_high - *quiet.ci_low));
  EXPECT_NEAR(quiet.point, 0.93, 0.005);
}

TEST(Speedup, NoSpeedupWithoutUsableSamplesAndNoIntervalFromTwo) {
  EXPECT_FALSE(speedup({}, {1, 2, 3}).ok);
  EXPECT_FALSE(speedup({1, 2, 3}, {}).ok);
  EXPECT_FALSE(speedup({1, NAN, 3}, {1, 2, 3}).ok);
  EXPECT_FALSE(speedup({0, 0, 0}, {1, 2, 3}).ok);
  const Speedup two = speedup({10, 10}, {20, 20, 20});
  ASSERT_TRUE(two.ok);
  EXPECT_DOUBLE_EQ(two.point, 2.0);
  EXPECT_FALSE(two.ci_low.has_value());
  EXPECT_FALSE(two.ci_high.has_value());
}

TEST(Speedup, DeterministicForASeed) {
  const auto kernel = noisy(50, 0.02, 12, 41), reference = noisy(60, 0.02, 12, 42);
  const Speedup a = speedup(kernel, reference, 0.95, 2000, 7), b = speedup(kernel, reference, 0.95, 2000, 7);
  EXPECT_DOUBLE_EQ(*a.ci_low, *b.ci_low);
  EXPECT_DOUBLE_EQ(*a.ci_high, *b.ci_high);
}

// fast_p: correct and strictly more than p times faster, over every kernel given; a kernel
// without a speedup, or an incorrect one however fast, is in the denominator and not fast.
TEST(FastP, CountsCorrectKernelsFasterThanPOverEveryKernel) {
  const std::vector<FastPKernel> ks = {
      {true, 1.6},            // fast at 1 and 1.5
      {true, 1.2},            // fast at 1
      {true, 1.0},            // exactly as fast: not faster
      {false, 3.0},           // fast but wrong
      {true, std::nullopt},   // no reference timing
      {false, std::nullopt},  // failed before it was timed
  };
  const FastP one = fast_p(ks, 1.0);
  EXPECT_EQ(one.fast, 2u);
  EXPECT_EQ(one.total, 6u);
  EXPECT_EQ(one.timed, 4u);
  EXPECT_DOUBLE_EQ(one.share(), 2.0 / 6.0);
  const FastP one_half = fast_p(ks, 1.5);
  EXPECT_EQ(one_half.fast, 1u);
  EXPECT_DOUBLE_EQ(one_half.p, 1.5);
  EXPECT_EQ(fast_p({}, 1.0).total, 0u);
  EXPECT_DOUBLE_EQ(fast_p({}, 1.0).share(), 0.0);
}

}  // namespace
}  // namespace kfleet::stats
