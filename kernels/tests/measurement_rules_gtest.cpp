// Warm-up and throttle rules of the benchmark stage (MEASUREMENT.md steps 2 and 5).
#include <gtest/gtest.h>

#include <cmath>

#include "throttle_filter.hpp"
#include "timer_rate.hpp"
#include "warmup_rule.hpp"

namespace kfleet::harness {
namespace {

TEST(WarmupRule, KeepsGoingUntilTheMinimumTimeEvenWhenTimingsAreFlat) {
  WarmupRule w({0.5, 2.0, 4, 0.5});
  double t = 0;
  for (int i = 0; i < 20; ++i, t += 0.01) EXPECT_EQ(w.add(100.0, t), "") << "launch " << i;
  EXPECT_EQ(w.add(100.0, 0.5), "stable");
  EXPECT_EQ(w.launches(), 21u);
}

TEST(WarmupRule, WaitsWhileTimingsStillFall) {
  WarmupRule w({0.0, 10.0, 4, 0.5});
  double us = 200, t = 0;
  for (int i = 0; i < 40; ++i, t += 0.01, us *= 0.98) EXPECT_EQ(w.add(us, t), "") << "launch " << i;
  // Now flat: two flat windows later the medians agree.
  std::string end;
  int more = 0;
  while (end.empty() && more < 100) end = w.add(us, t += 0.01), ++more;
  EXPECT_EQ(end, "stable");
  EXPECT_LE(more, 8);
  EXPECT_NEAR(w.last_change_pct(), 0.0, 1e-9);
}

TEST(WarmupRule, StopsAtTheMaximumWhenNeverSettled) {
  WarmupRule w({0.1, 0.3, 4, 0.5});
  double t = 0;
  std::string end;
  for (int i = 0; end.empty() && i < 1000; ++i, t += 0.01) end = w.add(i % 2 ? 100 : 150 + i, t);
  EXPECT_EQ(end, "max_time");
  EXPECT_GE(t, 0.3);
}

TEST(WarmupRule, MinimumAboveMaximumIsClampedToTheMaximum) {
  WarmupRule w({5.0, 0.2, 2, 0.5});
  EXPECT_EQ(w.add(10, 0.0), "");
  EXPECT_EQ(w.add(10, 0.0), "");
  EXPECT_EQ(w.add(10, 0.0), "");
  EXPECT_EQ(w.add(10, 0.2), "stable");  // settled, and at the (clamped) minimum
}

TEST(ThrottleFilter, DiscardsSamplesWellBelowTheBestClockSeen) {
  ThrottleFilter f(2.0);
  f.observe(1980);
  EXPECT_FALSE(f.throttled(1975));  // 0.25 % below: measurement noise
  EXPECT_TRUE(f.throttled(1900));   // 4 % below: the GPU was slowed
  EXPECT_FALSE(f.throttled(1960));  // 1 % below
  EXPECT_EQ(f.discarded(), 1u);
  EXPECT_DOUBLE_EQ(f.reference_mhz(), 1980);
}

TEST(ThrottleFilter, ReferenceRisesWithFasterReadings) {
  ThrottleFilter f(2.0);
  EXPECT_FALSE(f.throttled(1500));
  EXPECT_FALSE(f.throttled(1980));
  EXPECT_TRUE(f.throttled(1500));
  EXPECT_DOUBLE_EQ(f.reference_mhz(), 1980);
}

// A large FP8 GEMM on an H100 (scaled_mm's n8192): the first warm-up launches run at the
// boost clock, then the kernel's own power draw holds the GPU lower. Against the best clock seen
// every one of its samples was discarded and the kernel had no result at all.
TEST(ThrottleFilter, AKernelThatHoldsTheGpuAtItsPowerLimitKeepsItsSamples) {
  ThrottleFilter f(2.0);
  for (double c : {2085.0, 2040.0, 1950.0, 1830.0, 1815.0, 1800.0, 1810.0, 1805.0, 1795.0, 1800.0})
    f.observe(c);
  f.settle();
  EXPECT_DOUBLE_EQ(f.reference_mhz(), 1800);  // the median of the second half, not 2085
  EXPECT_DOUBLE_EQ(f.best_mhz(), 2085);
  EXPECT_FALSE(f.throttled(1790));  // the kernel's own clock: kept
  EXPECT_FALSE(f.throttled(1900));  // faster than the reference: kept, and the reference stays
  EXPECT_DOUBLE_EQ(f.reference_mhz(), 1800);
  EXPECT_TRUE(f.throttled(1700));   // 5.6 % below what the kernel holds: slowed by something else
  EXPECT_EQ(f.discarded(), 1u);
}

TEST(ThrottleFilter, AKernelThatRunsAtTheBoostClockStillLosesItsSlowedSamples) {
  ThrottleFilter f(2.0);
  for (int i = 0; i < 40; ++i) f.observe(i % 2 ? 1980 : 1975);
  f.settle();
  EXPECT_FALSE(f.throttled(1970));
  EXPECT_TRUE(f.throttled(1900));  // a thermal event during sampling
  EXPECT_EQ(f.discarded(), 1u);
  f.settle();  // settles once: later readings never move the reference
  EXPECT_DOUBLE_EQ(f.reference_mhz(), 1980);
}

TEST(ThrottleFilter, WithoutAWarmUpTheBestClockSeenIsTheReference) {
  ThrottleFilter f(2.0);
  f.settle();  // no reading: nothing to settle on
  EXPECT_FALSE(f.settled());
  EXPECT_FALSE(f.throttled(1980));
  EXPECT_TRUE(f.throttled(1900));
  EXPECT_DOUBLE_EQ(f.reference_mhz(), 1980);
}

TEST(ThrottleFilter, UnknownClocksAndADisabledFilterNeverDiscard) {
  ThrottleFilter off(0.0);
  off.observe(2000);
  EXPECT_FALSE(off.throttled(1000));
  ThrottleFilter hip(2.0);
  hip.observe(2000);
  EXPECT_FALSE(hip.throttled(NAN));
  EXPECT_EQ(hip.discarded(), 0u);
}

}  // namespace
}  // namespace kfleet::harness

namespace kfleet::harness {
namespace {

std::vector<TimerStamp> stamps(std::size_t n, double gap_s, double ppm, double jitter_ns = 0) {
  std::vector<TimerStamp> s;
  double h = 5e9, g = 123e9;
  for (std::size_t i = 0; i < n; ++i) {
    const double j = jitter_ns * ((i * 7919) % 13 / 6.0 - 1);  // deterministic, in [-j, +j]
    s.push_back({h + j, g});
    h += gap_s * 1e9;
    g += gap_s * 1e9 * (1 + ppm * 1e-6);
  }
  return s;
}

TEST(TimerRate, FindsASlowGpuTimerAndScalesDurationsToTheHostClock) {
  const TimerRate r = timer_rate(stamps(180, 0.05, -7300, 10000));
  EXPECT_NEAR(r.ppm, -7300, 20);
  EXPECT_NEAR(r.scale, 1 / (1 - 7300e-6), 2e-5);
  EXPECT_TRUE(r.note.empty());
}

TEST(TimerRate, AnAccurateTimerLeavesDurationsAlmostUnchanged) {
  const TimerRate r = timer_rate(stamps(60, 0.1, -19.6, 5000));
  EXPECT_NEAR(r.ppm, -19.6, 10);
  EXPECT_NEAR(r.scale, 1.0, 3e-5);
}

TEST(TimerRate, OneJumpOfTheTimerDoesNotMoveTheRate) {
  auto s = stamps(100, 0.05, 0);
  for (std::size_t i = 60; i < s.size(); ++i) s[i].gpu_ns += 2e6;  // a 2 ms step
  s[30].host_ns += 3e6;                                                // one late host stamp
  const TimerRate r = timer_rate(s);
  EXPECT_NEAR(r.ppm, 0, 1);
}

TEST(TimerRate, TooShortOrImplausibleLeavesDurationsUnscaled) {
  TimerRate r = timer_rate(stamps(20, 0.01, -7300));  // 0.19 s of stamps
  EXPECT_TRUE(std::isnan(r.ppm));
  EXPECT_EQ(r.scale, 1.0);
  EXPECT_NE(r.note, "");
  r = timer_rate(stamps(2, 1, 0));
  EXPECT_EQ(r.scale, 1.0);
  EXPECT_NE(r.note, "");
  r = timer_rate(stamps(50, 0.05, 50000));
  EXPECT_NEAR(r.ppm, 50000, 50);
  EXPECT_EQ(r.scale, 1.0);
  EXPECT_NE(r.note, "");
}

}  // namespace
}  // namespace kfleet::harness
