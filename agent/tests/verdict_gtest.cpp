// How a benchmark that the kernel failed becomes a verdict: rejected with the reason (not an
// infrastructure error), and a result timed without the activity tracer says so.
#include "kfleet/agent/verdict.hpp"

#include <gtest/gtest.h>

namespace kfleet::agent {
namespace {

TEST(Verdict, SuspectOrFailedRecheckInTheBenchmarkIsARejection) {
  StageResult r;
  r.reason = "suspect: timed run 0: work outside the timing events: GPU activity spans 9615.0 us";
  const Verdict v = verdict_for_failed_stage("benchmark", r);
  EXPECT_EQ(v.outcome, RunOutcome::rejected);
  EXPECT_EQ(v.gate, "integrity");
  EXPECT_EQ(v.reason, r.reason);
  r.infra_error = true;  // the GPU was busy: the host's problem
  EXPECT_EQ(verdict_for_failed_stage("benchmark", r).outcome, RunOutcome::error);
}

TEST(Verdict, EventsOnlyTimingIsMarkedLessTrustworthy) {
  nlohmann::json bench = {{"median_us", 40.0}, {"timing", "events_only"},
                          {"timing_note", "LESS TRUSTWORTHY: CUPTI could not be loaded"}};
  const Verdict v = verdict_from_benchmark(bench);
  EXPECT_EQ(v.outcome, RunOutcome::passed);
  EXPECT_NE(v.reason.find("timing: events only, less trustworthy"), std::string::npos) << v.reason;
  bench["timing"] = "activity";
  EXPECT_EQ(verdict_from_benchmark(bench).reason.find("events only"), std::string::npos);
}

TEST(Verdict, InProcessTimingSaysSoInTheReason) {
  nlohmann::json bench = {{"median_us", 40.0}, {"timing", "activity"}, {"timing_mode", "in_process"},
                          {"timing_mode_note",
                           "in-process timing: the kernel's host code ran in the measuring process"}};
  const Verdict v = verdict_from_benchmark(bench);
  EXPECT_NE(v.reason.find("[in-process timing: the kernel's host code ran in the measuring process]"),
            std::string::npos) << v.reason;
  EXPECT_EQ(v.metrics["timing_mode"], "in_process");
  bench["timing_mode"] = "replay";
  EXPECT_EQ(verdict_from_benchmark(bench).reason.find("in-process"), std::string::npos);
}

// A problem's kernel: its comparisons with kfleet's PyTorch references become the verdict's
// `versus`, and its reason's last line, after every other note of the reason.
TEST(Verdict, AProblemsKernelsReasonEndsWithItsComparisonWithPyTorch) {
  nlohmann::json bench = {{"median_us", 100.0}, {"timing", "events_only"},
                          {"versus", {{{"baseline", "eager"}, {"speedup", 0.93}, {"ci_low", 0.92},
                                       {"ci_high", 0.94}, {"case", "llama3_8b"}, {"cached", true}},
                                      {{"baseline", "compile"}, {"case", "llama3_8b"},
                                       {"note", "torch.compile needs triton"}}}}};
  const Verdict v = verdict_from_benchmark(bench);
  EXPECT_EQ(v.outcome, RunOutcome::passed);
  ASSERT_EQ(v.versus.size(), 2u);
  EXPECT_TRUE(v.versus[0].cached);
  EXPECT_FALSE(v.versus[1].speedup.has_value());
  const auto nl = v.reason.find('\n');
  ASSERT_NE(nl, std::string::npos) << v.reason;
  EXPECT_NE(v.reason.substr(0, nl).find("events only"), std::string::npos) << v.reason;
  EXPECT_EQ(v.reason.substr(nl + 1),
            "0.93x eager [0.92, 0.94], torch.compile not timed (torch.compile needs triton) (llama3_8b)");
  // None: the reason is one line, as before.
  bench.erase("versus");
  EXPECT_EQ(verdict_from_benchmark(bench).reason.find('\n'), std::string::npos);
}

// Interleaved rounds: each round's delta is kept, and an inconclusive verdict's reason lists
// them, so a reader sees whether one round or the spread left it undecided.
TEST(Verdict, InterleavedRoundsAreKeptAndAnInconclusiveOneListsThem) {
  nlohmann::json bench = {{"median_us", 191.0}, {"timing", "activity"}, {"perf", "inconclusive"},
                          {"delta_pct", 0.093}, {"ci_low_pct", -0.1}, {"ci_high_pct", 0.68},
                          {"baseline_us", 190.8}, {"interleaved", true}, {"rounds", 3},
                          {"threshold_pct", 0.5}, {"round_ratios", {1.00093, 0.999, 1.0068}}};
  const Verdict v = verdict_from_benchmark(bench);
  EXPECT_EQ(v.outcome, RunOutcome::passed);
  EXPECT_EQ(v.metrics["round_deltas_pct"], nlohmann::json({0.093, -0.1, 0.68}));
  EXPECT_NE(v.reason.find("straddles the threshold; rounds (%): +0.09, -0.10, +0.68"), std::string::npos)
      << v.reason;
  // A decided verdict keeps the rounds in its metrics but not in its reason.
  bench["perf"] = "same";
  const Verdict same = verdict_from_benchmark(bench);
  EXPECT_EQ(same.metrics["round_deltas_pct"].size(), 3u);
  EXPECT_EQ(same.reason.find("rounds (%)"), std::string::npos) << same.reason;
}

}  // namespace
}  // namespace kfleet::agent

// Why nothing was compared reaches the verdict (a stored baseline timed in the other mode), and
// every verdict records how it was timed, so that it can itself be a baseline of its own mode.
TEST(Verdict, SaysWhyNothingWasComparedAndRecordsTheTimingMode) {
  nlohmann::json b = {{"median_us", 640.0}, {"timing_mode", "replay"},
                      {"compare_note", "baseline fa on L4 (run 2) was timed in-process"}};
  auto v = kfleet::agent::verdict_from_benchmark(b);
  EXPECT_EQ(v.reason, "passed: median 640 µs (no baseline to compare: baseline fa on L4 (run 2) "
                      "was timed in-process)");
  EXPECT_EQ(v.metrics.value("timing_mode", std::string()), "replay");
}
