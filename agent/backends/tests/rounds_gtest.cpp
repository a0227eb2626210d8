// The benchmark's process sequencing without a GPU: a process that ends with no result for the
// fleet's cause (a GPU that throttled every sample) is timed again, and a stage never ends
// "ok" without a median nor blames the kernel for the GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/harness_protocol.hpp"
#include "common/rounds.hpp"

namespace kb = kfleet::backends;
namespace ka = kfleet::agent;

namespace {

class LogSink : public ka::EventSink {
 public:
  void emit(const std::string&, nlohmann::json data) override { lines.push_back(data.dump()); }
  std::vector<std::string> lines;
};

// What time_once makes of a harness process that discarded every sample as throttled: the
// bench line the harness prints then, through the agent's parser.
kb::TimedRun throttled_process() {
  kb::HarnessReport rep;
  rep.add(*kb::parse_harness_line(
      R"j({"type":"bench","case":"mission","unsupported":true,"no_result":"gpu_throttled","reason":"every sample ran with the SM clock over 2 % below its best (1980 MHz): the GPU is throttled; let it cool or pass --throttle-pct 0","recheck":{"pass":true}})j"));
  kb::TimedRun t;
  t.reason = kb::harness_failure(1, 0, false, 60, rep, "", t.infra_error);
  if (kb::bench_no_result_cause(rep) == kb::kGpuThrottled) t.cause = kb::kGpuThrottled;
  return t;
}

kb::TimedRun timed(double us) {
  kb::TimedRun t;
  t.ok = true;
  t.samples_us = std::vector<double>(10, us);
  return t;
}

// Interleaved rounds at a 0.5 % threshold, the reference always 100 us and the candidate's
// rounds taken in turn from `candidate`.
ka::StageResult rounds_against(const std::vector<double>& candidate, int min_rounds, int max_rounds) {
  ka::StopFlag stop;
  LogSink sink;
  ka::Comparison cmp;
  cmp.label = "reference";
  kb::RoundPlan plan;
  plan.min_rounds = min_rounds;
  plan.max_rounds = max_rounds;
  plan.threshold_pct = 0.5;
  std::size_t next = 0;
  return kb::run_rounds(plan, [&](bool baseline, int) {
    return baseline ? timed(100) : timed(candidate[next++ % candidate.size()]);
  }, cmp, stop, sink);
}

}  // namespace

TEST(Rounds, AThrottledPooledProcessIsTimedAgainAndTheStageHasAMedian) {
  ka::StopFlag stop;
  LogSink sink;
  int calls = 0;
  auto r = kb::run_pooled(1, [&](bool, int) { return ++calls == 1 ? throttled_process() : timed(100); },
                          stop, &sink);
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(calls, 2);
  EXPECT_DOUBLE_EQ(r.data.value("median_us", 0.0), 100.0);
  ASSERT_FALSE(sink.lines.empty());
  EXPECT_NE(sink.lines.front().find("gpu_throttled"), std::string::npos) << sink.lines.front();
}

TEST(Rounds, AThrottledRoundIsTimedAgainAndTheVerdictHasAMedian) {
  ka::StopFlag stop;
  LogSink sink;
  ka::Comparison cmp;
  cmp.label = "reference";
  kb::RoundPlan plan;
  plan.min_rounds = 2;
  plan.max_rounds = 2;
  int candidate_calls = 0;
  auto r = kb::run_rounds(plan, [&](bool baseline, int) {
    if (baseline) return timed(100);
    return ++candidate_calls == 2 ? throttled_process() : timed(100);
  }, cmp, stop, sink);
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(candidate_calls, 3);
  EXPECT_EQ(r.data.value("rounds", 0), 2);
  EXPECT_DOUBLE_EQ(r.data.value("median_us", 0.0), 100.0);
}

// The bootstrap CI of the median of 3 round ratios is their whole range (so it is for 4 and 5):
// one round 0.6 % off leaves an identical copy inconclusive at a 0.5 % threshold after 3 rounds
// (the pair's old cap); by 7 rounds (here 6) that round no longer decides. min_rounds 3 with
// max_rounds 7 decides after 3 when every round agrees and goes on only when they do not.
TEST(Rounds, OneOutlyingRoundIsOutvotedBySevenNotByThree) {
  const std::vector<double> candidate = {100.0, 100.6, 100.05, 99.95, 100.0, 100.02, 99.98};
  const auto three = rounds_against(candidate, 3, 3);
  ASSERT_TRUE(three.ok) << three.reason;
  EXPECT_EQ(three.data.value("perf", ""), "inconclusive");
  const auto seven = rounds_against(candidate, 3, 7);
  ASSERT_TRUE(seven.ok) << seven.reason;
  EXPECT_EQ(seven.data.value("perf", ""), "same") << seven.data.dump();
  EXPECT_GT(seven.data.value("rounds", 0), 5);  // the outlier outvoted, not merely diluted at 4 or 5
  // The same plan on rounds that agree: decided after 3.
  std::size_t i = 0;
  ka::StopFlag stop;
  LogSink sink;
  ka::Comparison cmp;
  kb::RoundPlan plan;
  plan.min_rounds = 3;
  plan.max_rounds = 7;
  plan.threshold_pct = 0.5;
  const auto agree = kb::run_rounds(plan, [&](bool baseline, int) {
    return baseline ? timed(100) : timed(100.0 + 0.01 * static_cast<double>(i++ % 3));
  }, cmp, stop, sink);
  ASSERT_TRUE(agree.ok) << agree.reason;
  EXPECT_EQ(agree.data.value("perf", ""), "same");
  EXPECT_EQ(agree.data.value("rounds", 0), 3);
}

TEST(Rounds, TwoOutlyingRoundsAreOutvotedByElevenNotBySeven) {
  // An identical copy on an H100 (2026-12-06): one try of five ended inconclusive at 7 rounds,
  // CI [-0.10, 0.68], its upper end the second-highest round. Two disturbed rounds of seven decide
  // the bootstrap CI of the median; of eleven they do not.
  const std::vector<double> candidate = {100.0,  100.7, 100.05, 99.95, 100.8, 100.02,
                                         99.98,  100.01, 99.99, 100.03, 99.97};
  const auto seven = rounds_against(candidate, 3, 7);
  ASSERT_TRUE(seven.ok) << seven.reason;
  EXPECT_EQ(seven.data.value("perf", ""), "inconclusive") << seven.data.dump();
  EXPECT_EQ(seven.data.value("rounds", 0), 7);
  const auto eleven = rounds_against(candidate, 3, 11);
  ASSERT_TRUE(eleven.ok) << eleven.reason;
  EXPECT_EQ(eleven.data.value("perf", ""), "same") << eleven.data.dump();
  EXPECT_GT(eleven.data.value("rounds", 0), 7);
}

TEST(Rounds, AGpuThatStaysThrottledFailsTheStageAsTheFleetsWithItsCause) {
  ka::StopFlag stop;
  int calls = 0;
  auto r = kb::run_pooled(2, [&](bool, int) { ++calls; return throttled_process(); }, stop);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.infra_error);  // an error verdict of the fleet, never a rejection of the kernel
  EXPECT_EQ(calls, kb::kFleetRetries + 1);
  EXPECT_NE(r.reason.find("gpu_throttled"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("the GPU is throttled"), std::string::npos) << r.reason;
}

TEST(Rounds, AKernelsFailureIsNotRetried) {
  ka::StopFlag stop;
  int calls = 0;
  auto r = kb::run_pooled(1, [&](bool, int) {
    ++calls;
    kb::TimedRun t;
    t.reason = "outputs of timed runs failed the re-check: timed run 4: 12 elements outside atol/rtol";
    return t;
  }, stop);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.infra_error);
  EXPECT_EQ(calls, 1);
}

TEST(HarnessProtocolNoResult, ThrottledSamplesWithAFailedRecheckAreTheKernels) {
  kb::HarnessReport rep;
  rep.add(*kb::parse_harness_line(
      R"j({"type":"bench","case":"mission","unsupported":true,"no_result":"recheck_failed","reason":"every sample ran with the SM clock over 2 % below its best (1980 MHz): the GPU is throttled; let it cool or pass --throttle-pct 0","recheck":{"pass":false,"reason":"timed run 1: 4 elements never written"}})j"));
  bool infra = true;
  const std::string why = kb::harness_failure(1, 0, false, 60, rep, "", infra);
  EXPECT_FALSE(infra);
  EXPECT_NE(why.find("failed the re-check"), std::string::npos) << why;
  EXPECT_EQ(kb::bench_no_result_cause(rep), "recheck_failed");
}
