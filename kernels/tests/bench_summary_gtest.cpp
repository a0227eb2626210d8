// The summary phase of the benchmark stage: the bench line's statistics and which suspect sign
// it names, in the order PROTOCOL.md gives them.
#include <gtest/gtest.h>

#include <cmath>

#include "bench_summary.hpp"

namespace kfleet::harness {
namespace {

TEST(BenchSummary, StatisticsOfTheSamples) {
  const SampleStats s = sample_stats({103, 100, 101, 102, 104});
  EXPECT_DOUBLE_EQ(s.median, 102);
  EXPECT_DOUBLE_EQ(s.mean, 102);
  EXPECT_DOUBLE_EQ(s.min, 100);
  EXPECT_DOUBLE_EQ(s.max, 104);
  EXPECT_DOUBLE_EQ(s.p10, 100.4);  // interpolated between the two smallest
  EXPECT_DOUBLE_EQ(s.p90, 103.6);
  EXPECT_NEAR(s.stdev, std::sqrt(2.5), 1e-12);  // the sample (n - 1) deviation
  EXPECT_NEAR(s.rel_stdev_pct, 100 * std::sqrt(2.5) / 102, 1e-12);
  const SampleStats one = sample_stats({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.stdev, 0);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
}

SuspectSigns honest() {
  SuspectSigns s;
  s.timed_runs = 100;
  s.median = 100;
  s.replay_median = 99;
  return s;
}

TEST(BenchSummary, AnHonestRunIsNotSuspect) {
  EXPECT_EQ(suspect_reason(honest()), "");
  // One hiccup of each kind in a hundred samples is not a trick.
  SuspectSigns s = honest();
  s.structural = 1;
  s.structural_reason = "timed run 4: work outside the launch";
  s.disagreements = 9;
  s.disagreement_reason = "timed run 7: events and span disagree";
  EXPECT_EQ(suspect_reason(s), "");
}

TEST(BenchSummary, SignsInATenthOfTheSamplesAndAtLeastTwo) {
  SuspectSigns s = honest();
  s.disagreements = 10;
  s.disagreement_reason = "timed run 7: events and span disagree";
  EXPECT_EQ(suspect_reason(s), "timed run 7: events and span disagree (10 of 100 samples)");
  // Structural signs are named first.
  s.structural = 10;
  s.structural_reason = "timed run 3: no activity recorded";
  EXPECT_EQ(suspect_reason(s), "timed run 3: no activity recorded (10 of 100 samples)");
  // Few runs: two samples are still needed, one is not enough.
  SuspectSigns few = honest();
  few.timed_runs = 5;
  few.structural = 1;
  few.structural_reason = "timed run 0: x";
  EXPECT_EQ(suspect_reason(few), "");
  few.structural = 2;
  EXPECT_EQ(suspect_reason(few), "timed run 0: x (2 of 5 samples)");
}

TEST(BenchSummary, TheFloorThenTheReplayProbe) {
  SuspectSigns s = honest();
  s.replay_median = 74.9;  // under 3/4 of the fresh median: a cache
  EXPECT_EQ(suspect_reason(s),
            "the kernel took 74.9 us on inputs it had already seen but 100 us on fresh ones: it "
            "keeps results across launches (a content-keyed cache)");
  s.floor_suspect = "faster than the roofline floor";
  EXPECT_EQ(suspect_reason(s), "faster than the roofline floor");
  // No probe (a failed re-check skips it): NaN never makes a run suspect.
  SuspectSigns none = honest();
  none.replay_median = NAN;
  EXPECT_EQ(suspect_reason(none), "");
  none.replay_median = 75;  // exactly 3/4 is not under it
  EXPECT_EQ(suspect_reason(none), "");
}

}  // namespace
}  // namespace kfleet::harness
