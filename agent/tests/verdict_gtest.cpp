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

// The reason's numbers: whole µs from 100, one decimal from 10, two below; the sign of a delta
// always shown. A reader compares "do not merge" lines across runs, so the cut-overs are fixed.
TEST(Verdict, NumbersInTheReasonHaveThePrecisionTheirSizeSuits) {
  EXPECT_EQ(format_us(696.4), "696 µs");
  EXPECT_EQ(format_us(100), "100 µs");
  EXPECT_EQ(format_us(-150), "-150 µs");
  EXPECT_EQ(format_us(38.24), "38.2 µs");
  EXPECT_EQ(format_us(10), "10.0 µs");
  EXPECT_EQ(format_us(-12.34), "-12.3 µs");
  EXPECT_EQ(format_us(4.271), "4.27 µs");
  EXPECT_EQ(format_us(0), "0.00 µs");
  EXPECT_EQ(format_pct(6.14), "+6.1%");
  EXPECT_EQ(format_pct(-0.44), "-0.4%");
  EXPECT_EQ(format_pct(0), "+0.0%");
}

// Each failed stage's outcome, gate and reason, and for an error which side failed.
TEST(Verdict, EachFailedStageHasItsOutcomeGateAndSide) {
  StageResult r;
  r.reason = "register count 144 > budget 128";
  for (const char* gate : {"resources", "correctness", "performance"}) {
    const Verdict v = verdict_for_failed_stage(gate, r);
    EXPECT_EQ(v.outcome, RunOutcome::rejected) << gate;
    EXPECT_EQ(v.gate, gate);
    EXPECT_EQ(v.reason, r.reason);
    EXPECT_FALSE(v.metrics.contains("failed_side")) << gate;
  }
  // A build refused for more LDS than the target has is the resources gate's.
  StageResult lds = r;
  lds.data = {{"gate", "resources"}};
  Verdict v = verdict_for_failed_stage("build", lds);
  EXPECT_EQ(v.outcome, RunOutcome::rejected);
  EXPECT_EQ(v.gate, "resources");
  lds.data = {{"gate", "correctness"}};
  EXPECT_EQ(verdict_for_failed_stage("build", lds).outcome, RunOutcome::error);
  // Any stage whose data says integrity: the conditions, not the kernel's numbers.
  StageResult integrity = r;
  integrity.data = {{"integrity", true}};
  v = verdict_for_failed_stage("correctness", integrity);
  EXPECT_EQ(v.outcome, RunOutcome::rejected);
  EXPECT_EQ(v.gate, "integrity");
  integrity.data = {{"integrity", false}};
  EXPECT_EQ(verdict_for_failed_stage("correctness", integrity).gate, "correctness");
  // Errors: a build the compiler refused, any other stage, and what no reason was given for.
  StageResult build = r;
  build.reason = "nvcc: error: x.cu:3";
  v = verdict_for_failed_stage("build", build);
  EXPECT_EQ(v.outcome, RunOutcome::error);
  EXPECT_TRUE(v.gate.empty());
  EXPECT_EQ(v.reason, "build failed: nvcc: error: x.cu:3 [the job's failure: the agent and kfleetd were working]");
  EXPECT_EQ(v.metrics["failed_side"], "job");
  v = verdict_for_failed_stage("profile", StageResult{});
  EXPECT_EQ(v.outcome, RunOutcome::error);
  EXPECT_EQ(v.reason.rfind("profile failed: no reason given [the job's failure", 0), 0u) << v.reason;
  // An infrastructure error of a gate stage: the stage's name, not "failed".
  StageResult infra = r;
  infra.infra_error = true;
  v = verdict_for_failed_stage("resources", infra);
  EXPECT_EQ(v.outcome, RunOutcome::error);
  EXPECT_EQ(v.reason.rfind("resources: register count 144 > budget 128 [the job's failure", 0), 0u) << v.reason;
  // The fleet's side: kfleetd refusing the sources, or kfleet's GPU reference disagreeing.
  v = verdict_for_failed_stage("fetch", r);
  EXPECT_EQ(v.metrics["failed_side"], "fleet");
  EXPECT_NE(v.reason.find("kfleetd would not hand over the sources"), std::string::npos) << v.reason;
  StageResult reference = r;
  reference.data = {{"reference_fault", true}};
  v = verdict_for_failed_stage("reference", reference);
  EXPECT_EQ(v.metrics["failed_side"], "fleet");
  EXPECT_NE(v.reason.find("kfleet's GPU reference disagrees"), std::string::npos) << v.reason;
  reference.data = {{"reference_fault", false}};
  EXPECT_EQ(verdict_for_failed_stage("reference", reference).metrics["failed_side"], "job");
}

// A decided comparison: regressed rejects at the performance gate ("do not merge"), improved and
// same pass, each with the delta and both medians, and the numbers are kept as fields.
TEST(Verdict, ADecidedComparisonSaysItsDeltaAndBothMedians) {
  nlohmann::json bench = {{"median_us", 193.94}, {"perf", "regressed"}, {"delta_pct", 1.169},
                          {"ci_low_pct", 0.879}, {"ci_high_pct", 1.325}, {"baseline_us", 191.14},
                          {"threshold_pct", 0.5}, {"interleaved", true}, {"rounds", 3},
                          {"baseline_label", "base"}};
  Verdict v = verdict_from_benchmark(bench);
  EXPECT_EQ(v.outcome, RunOutcome::rejected);
  EXPECT_EQ(v.gate, "performance");
  EXPECT_EQ(v.reason, "do not merge: +1.2% (194 µs vs 191 µs), interleaved, 3 rounds");
  EXPECT_EQ(v.perf, "regressed");
  EXPECT_EQ(v.delta_pct, 1.169);
  EXPECT_EQ(v.ci_low_pct, 0.879);
  EXPECT_EQ(v.ci_high_pct, 1.325);
  EXPECT_EQ(v.baseline_us, 191.14);
  EXPECT_EQ(v.metrics["rounds"], 3);
  EXPECT_EQ(v.metrics["interleaved"], true);
  EXPECT_EQ(v.metrics["baseline_label"], "base");
  bench["perf"] = "improved";
  bench["delta_pct"] = -4.0;
  bench["rounds"] = 1;
  v = verdict_from_benchmark(bench);
  EXPECT_EQ(v.outcome, RunOutcome::passed);
  EXPECT_TRUE(v.gate.empty());
  EXPECT_EQ(v.reason, "improved: -4.0% (194 µs vs 191 µs), interleaved, 1 round");
  bench["perf"] = "same";
  bench["delta_pct"] = 0.03;
  bench.erase("interleaved");
  bench.erase("baseline_label");
  v = verdict_from_benchmark(bench);
  EXPECT_EQ(v.outcome, RunOutcome::passed);
  EXPECT_EQ(v.reason, "same within ±0.5%: +0.0% (194 µs vs 191 µs)");
  EXPECT_FALSE(v.metrics.contains("interleaved"));
  EXPECT_FALSE(v.metrics.contains("baseline_label"));
  bench.erase("threshold_pct");  // the default threshold
  EXPECT_EQ(verdict_from_benchmark(bench).reason.rfind("same within ±1%: ", 0), 0u);
  // A perf word without a median is no comparison.
  bench.erase("median_us");
  v = verdict_from_benchmark(bench);
  EXPECT_EQ(v.reason, "passed");
  EXPECT_TRUE(v.perf.empty());
}

// The benchmark's fields of a wrong type are read as absent, not thrown on or half-read: a perf
// that is no string is no comparison, a delta that is no number is none, and round ratios or
// comparisons that are no array leave nothing behind.
TEST(Verdict, FieldsOfAWrongTypeReadAsAbsent) {
  Verdict v = verdict_from_benchmark({{"median_us", 40.0}, {"perf", 7}});
  EXPECT_EQ(v.reason, "passed: median 40.0 µs (no baseline to compare)");
  EXPECT_TRUE(v.perf.empty());
  v = verdict_from_benchmark({{"median_us", 40.0}, {"perf", "same"}, {"delta_pct", "1.2"},
                              {"baseline_us", 39.0}, {"round_ratios", 1.01}, {"versus", {{"eager", 1}}}});
  EXPECT_EQ(v.perf, "same");
  EXPECT_FALSE(v.delta_pct.has_value());
  EXPECT_EQ(v.baseline_us, 39.0);
  EXPECT_FALSE(v.metrics.contains("round_deltas_pct"));
  EXPECT_TRUE(v.versus.empty());
  EXPECT_EQ(v.reason, "same within ±1%: +0.0% (40.0 µs vs 39.0 µs)");
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
