// The rules behind verdicts a kernel cannot fake, on recorded data (no GPU): activity spans and
// their cross-check with events and host time, fresh input seeds and the re-check draw, the
// dense tensor peaks and floors, and what do-nothing outputs score against a tolerance.
#include "integrity.hpp"
#include "stop_rule.hpp"

#include <cmath>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace kfleet::harness {
namespace {

using R = ActivityRecord;
constexpr std::uint32_t kHarness = 7;  // the harness's own stream

SampleWindow window(std::uint64_t t0, std::uint64_t t1, double event_us) {
  return SampleWindow{t0, t0 + 5'000, t1, event_us};
}

TEST(ActivitySpan, HonestKernelSpansFirstToLastRecord) {
  // Two kernels on the launch's stream: 100 us apart in start, the span covers both.
  std::vector<R> in = {{R::kernel_kind, 1'010'000, 1'060'000, 7},
                       {R::kernel_kind, 1'061'000, 1'110'000, 7}};
  const auto t = judge_sample(in, {}, kHarness, window(1'000'000, 1'200'000, 104.0));
  EXPECT_DOUBLE_EQ(t.span_us, 100.0);
  EXPECT_EQ(t.records, 2u);
  EXPECT_EQ(t.streams, 1u);
  EXPECT_EQ(t.suspect, "");
}

TEST(ActivitySpan, WindowActivityNamesWhatTheSpanHeldBesidesTheKernel) {
  // A 17 us kernel whose span also holds a copy on another stream that began 18 us before it:
  // the bench line's window_activity shows both, by stream and kind, and the lead over t0.
  WindowActivityLog log;
  for (int i = 0; i < 3; ++i) {
    std::vector<R> in = {{R::kernel_kind, 1'030'000, 1'047'000, 7}};
    if (i > 0) in.push_back({R::memcpy_kind, 1'010'000, 1'012'000, 9});
    const auto t = judge_sample(in, {}, kHarness, window(1'000'000, 1'200'000, 40.0));
    ASSERT_EQ(t.parts.size(), i > 0 ? 2u : 1u);
    EXPECT_DOUBLE_EQ(t.lead_us, i > 0 ? 10.0 : 30.0);
    log.add(t);
  }
  const std::string j = log.json();
  EXPECT_NE(j.find(R"("kind":"kernel","stream":7,"records":3,"samples":3,"median_busy_us":17)"),
            std::string::npos) << j;
  EXPECT_NE(j.find(R"("kind":"memcpy","stream":9,"records":2,"samples":2,"median_busy_us":2)"),
            std::string::npos) << j;
  EXPECT_DOUBLE_EQ(log.lead_median_us(), 10.0);
}

TEST(ActivitySpan, EdgeGapsSayWhereAChainsSpanExceedsItsKernels) {
  // Three kernels, 0.4 us apart then overlapping by 0.2 us, whatever order the records came in:
  // the gaps are by start order; the log keeps each position's median over the samples.
  WindowActivityLog log;
  for (std::uint64_t shift : {0, 100, 300}) {
    std::vector<R> in = {{R::kernel_kind, 1'010'400 + shift, 1'020'000, 7},
                         {R::kernel_kind, 1'000'000, 1'010'000, 7},
                         {R::kernel_kind, 1'019'800, 1'030'000, 7}};
    const auto t = judge_sample(in, {}, kHarness, window(1'000'000, 1'100'000, 31.0));
    ASSERT_EQ(t.gaps_us.size(), 2u);
    EXPECT_NEAR(t.gaps_us[0], 0.4 + shift / 1000.0, 1e-9);
    EXPECT_NEAR(t.gaps_us[1], -0.2, 1e-9);
    log.add(t);
  }
  const auto m = log.gap_medians_us();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_NEAR(m[0], 0.5, 1e-9);
  EXPECT_NEAR(m[1], -0.2, 1e-9);
  // A sample with another number of records: the positions no longer line up, so none is given.
  log.add(judge_sample({{R::kernel_kind, 1'000'000, 1'010'000, 7}}, {}, kHarness,
                       window(1'000'000, 1'100'000, 11.0)));
  EXPECT_TRUE(log.gap_medians_us().empty());
  // The same when the first sample is the one with a single record.
  WindowActivityLog first_alone;
  first_alone.add(judge_sample({{R::kernel_kind, 1'000'000, 1'010'000, 7}}, {}, kHarness,
                               window(1'000'000, 1'100'000, 11.0)));
  first_alone.add(judge_sample({{R::kernel_kind, 1'000'000, 1'010'000, 7}, {R::kernel_kind, 1'010'400, 1'020'000, 7}},
                               {}, kHarness, window(1'000'000, 1'100'000, 21.0)));
  EXPECT_TRUE(first_alone.gap_medians_us().empty());
}

TEST(ActivitySpan, SideStreamWorkTheEventsMissedIsSuspect) {
  // The non-blocking side stream case from the field: events 1.3 us, real work 9,615 us.
  std::vector<R> in = {{R::kernel_kind, 1'002'000, 1'002'000 + 9'615'000, 21}};
  const auto t = judge_sample(in, {}, kHarness, window(1'000'000, 11'000'000, 1.31));
  EXPECT_NEAR(t.span_us, 9615.0, 1e-9);
  EXPECT_NE(t.suspect.find("work outside the timing events"), std::string::npos) << t.suspect;
  EXPECT_NE(t.suspect.find("side stream"), std::string::npos);
}

TEST(ActivitySpan, MemcpyAndMemsetCountAsWork) {
  // Output written by a copy: the copy is the launch's work and is timed.
  std::vector<R> in = {{R::memset_kind, 1'001'000, 1'002'000, 7},
                       {R::memcpy_kind, 1'002'000, 1'502'000, 7}};
  const auto t = judge_sample(in, {}, kHarness, window(1'000'000, 2'000'000, 505.0));
  EXPECT_DOUBLE_EQ(t.span_us, 501.0);
  EXPECT_EQ(t.suspect, "");
}

TEST(ActivitySpan, HostTimeInsideTheEventsIsSuspect) {
  // 5 ms of host precompute between the events, then a 20 us copy of the answer.
  std::vector<R> in = {{R::memcpy_kind, 6'000'000, 6'020'000, 7}};
  const auto t = judge_sample(in, {}, kHarness, window(1'000'000, 6'100'000, 5'030.0));
  EXPECT_NE(t.suspect.find("host-side precompute"), std::string::npos) << t.suspect;
}

TEST(ActivitySpan, LaunchLatencyWithinTheBoundIsNotSuspect) {
  // A 3 us kernel whose events see 12 us of launch latency: inside the 20 us slack.
  std::vector<R> in = {{R::kernel_kind, 1'009'000, 1'012'000, 7}};
  EXPECT_EQ(judge_sample(in, {}, kHarness, window(1'000'000, 1'100'000, 12.0)).suspect, "");
  // ... and the bound is relative for long kernels: 10 ms span vs 10.5 ms events passes,
  // 10 ms vs 12 ms does not.
  std::vector<R> big = {{R::kernel_kind, 1'000'100, 11'000'100, 7}};
  EXPECT_EQ(judge_sample(big, {}, kHarness, window(1'000'000, 13'000'000, 10'500.0)).suspect, "");
  EXPECT_NE(judge_sample(big, {}, kHarness, window(1'000'000, 13'000'000, 12'000.0)).suspect, "");
}

TEST(ActivitySpan, HostWorkBetweenGpuOperationsIsSuspect) {
  // Download, 70 ms on the CPU, upload: the span covers the host time (so the sample is honest)
  // but the GPU sat idle for almost all of it.
  std::vector<R> in = {{R::memcpy_kind, 1'001'000, 1'002'000, 7},
                       {R::memcpy_kind, 71'002'000, 71'003'000, 7}};
  const auto t = judge_sample(in, {}, kHarness, window(1'000'000, 71'100'000, 70'010.0));
  EXPECT_NEAR(t.idle_us, 70'000.0, 1e-6);
  EXPECT_FALSE(t.structural);
  EXPECT_NE(t.suspect.find("GPU sat idle"), std::string::npos) << t.suspect;
  // Two kernels back to back with a 2 us gap are not.
  std::vector<R> two = {{R::kernel_kind, 1'010'000, 1'060'000, 7},
                        {R::kernel_kind, 1'062'000, 1'110'000, 7}};
  EXPECT_EQ(judge_sample(two, {}, kHarness, window(1'000'000, 1'200'000, 104.0)).suspect, "");
}

TEST(ActivitySpan, MeasuredLaunchOverheadWidensTheBound) {
  // Tracing on this host delays a launch by ~200 us after the start event: a 40 us kernel then
  // shows 240 us of events. Without the calibration that reads as host work; with it, it does not.
  std::vector<R> in = {{R::kernel_kind, 1'200'000, 1'240'000, 7}};
  EXPECT_NE(judge_sample(in, {}, kHarness, window(1'000'000, 1'300'000, 240.0)).suspect, "");
  CrossCheckBound b;
  b.launch_overhead_us = 200;
  EXPECT_EQ(judge_sample(in, {}, kHarness, window(1'000'000, 1'300'000, 240.0), b).suspect, "");
}

TEST(ActivitySpan, SplitAtTheSampleStart) {
  std::vector<R> all = {{R::memset_kind, 10'000, 20'000, 7}, {R::kernel_kind, 250'000, 400'000, 3},
                        {R::kernel_kind, 20'000, 300'000, 3}};
  std::vector<R> between, in;
  split_at(all, 250'000, kHarness, &between, &in);
  ASSERT_EQ(between.size(), 1u);  // ended by t0
  ASSERT_EQ(in.size(), 2u);       // started at/after t0, or straddling it (then flagged)
  EXPECT_NE(judge_sample(in, between, kHarness, window(250'000, 1'000'000, 380.0))
                .suspect.find("earlier launch"),
            std::string::npos);
}

TEST(ActivitySpan, TheHarnessStreamsLastKernelIsNeverInTheWindow) {
  // Seen on an H200: warm_translations' page touch ran on the harness's stream and the device was
  // synchronised before t0, but CUPTI's clock conversion put its end 2 us after t0. Taken into
  // the window, it began a span 17 us of launch latency before the 17 us kernel, on two streams.
  constexpr std::uint32_t kLaunch = 3;
  const std::vector<R> all = {{R::kernel_kind, 990'000, 1'002'000, kHarness},
                              {R::kernel_kind, 1'019'000, 1'036'000, kLaunch}};
  std::vector<R> between, in;
  split_at(all, 1'000'000, kHarness, &between, &in);
  ASSERT_EQ(between.size(), 1u);
  ASSERT_EQ(in.size(), 1u);
  const auto t = judge_sample(in, between, kHarness, window(1'000'000, 1'100'000, 25.0));
  EXPECT_DOUBLE_EQ(t.span_us, 17.0);
  EXPECT_EQ(t.streams, 1u);
  EXPECT_EQ(t.suspect, "");
  // A record of another stream that straddles t0 stays in the window (and is judged there).
  split_at({{R::kernel_kind, 990'000, 1'002'000, 9}}, 1'000'000, kHarness, &between, &in);
  EXPECT_EQ(in.size(), 2u);
}

TEST(ActivitySpan, NoActivityIsSuspect) {
  const auto t = judge_sample({}, {}, kHarness, window(1'000'000, 2'000'000, 3.0));
  EXPECT_NE(t.suspect.find("no GPU activity"), std::string::npos);
}

TEST(ActivitySpan, WorkBetweenSamplesOnAForeignStreamIsSuspect) {
  // Deferred work that ran after the previous sample's synchronisation.
  std::vector<R> in = {{R::kernel_kind, 1'010'000, 1'020'000, 7}};
  std::vector<R> between = {{R::memset_kind, 900'000, 910'000, kHarness},
                            {R::kernel_kind, 950'000, 990'000, 33}};
  const auto t = judge_sample(in, between, kHarness, window(1'000'000, 1'100'000, 12.0));
  EXPECT_NE(t.suspect.find("deferred past the stop event"), std::string::npos) << t.suspect;
  // The harness's own work between samples is not suspect.
  between.pop_back();
  EXPECT_EQ(judge_sample(in, between, kHarness, window(1'000'000, 1'100'000, 12.0)).suspect, "");
}

TEST(ActivitySpan, ActivityBeforeTheWindowOrAfterTheSyncIsSuspect) {
  std::vector<R> early = {{R::kernel_kind, 900'000, 1'020'000, 7}};
  EXPECT_NE(judge_sample(early, {}, kHarness, window(1'000'000, 1'100'000, 115.0))
                .suspect.find("earlier launch"),
            std::string::npos);
  // Within 50 us of the edges is clock conversion, not a trick.
  std::vector<R> edge = {{R::kernel_kind, 990'000, 1'020'000, 7}};
  EXPECT_EQ(judge_sample(edge, {}, kHarness, window(1'000'000, 1'100'000, 25.0)).suspect, "");
  std::vector<R> late = {{R::kernel_kind, 1'010'000, 1'200'000, 7}};
  EXPECT_NE(judge_sample(late, {}, kHarness, window(1'000'000, 1'100'000, 190.0))
                .suspect.find("after the device was synchronised"),
            std::string::npos);
}

TEST(FreshInputs, EverySampleAndEveryRunGetsItsOwnSeed) {
  std::set<std::uint64_t> seen;
  for (std::uint64_t nonce : {1ull, 2ull, 0xdeadbeefull})
    for (std::uint64_t i = 0; i < 1000; ++i) seen.insert(sample_input_seed(nonce, i));
  EXPECT_EQ(seen.size(), 3000u);
  EXPECT_EQ(sample_input_seed(5, 9), sample_input_seed(5, 9));  // replayable from the nonce
}

TEST(FreshInputs, RecheckTakesTheFirstSamplesAndARandomQuarter) {
  RecheckPolicy p;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::size_t checked = 0;
  const std::size_t n = 4000;
  for (std::size_t i = 0; i < n; ++i) {
    const bool c = p.checked(i, u(rng));
    if (i < p.always_first) {
      EXPECT_TRUE(c) << i;
    }
    checked += c;
  }
  const double frac = static_cast<double>(checked - p.always_first) / (n - p.always_first);
  EXPECT_NEAR(frac, 0.25, 0.03);
  // The draw decides, not the index: the same index is checked or not depending on u.
  EXPECT_TRUE(p.checked(100, 0.1));
  EXPECT_FALSE(p.checked(100, 0.9));
}

// A re-check that costs hundreds of timed runs (an 8192^3 GEMM's fp32 reference) lowers p so
// re-checking costs about what the runs do, never below p_min; a cheap one keeps p_max. Nonsense
// timings change nothing.
TEST(FreshInputs, RecheckRateFollowsItsCostWithinBounds) {
  RecheckPolicy p;
  p.calibrate(0.0005, 0.0001, 1000);  // re-check cheaper than a run: the most checks
  EXPECT_DOUBLE_EQ(p.p, p.p_max);
  p.calibrate(0.001, 0.01, 1000);  // ten runs per re-check
  EXPECT_DOUBLE_EQ(p.p, 0.1);
  p.calibrate(0.003, 0.4, 100003);  // a large GEMM's reference, many runs allowed
  EXPECT_DOUBLE_EQ(p.p, p.p_min);
  for (double bad : {0.0, -1.0, std::nan(""), double(INFINITY)}) {
    RecheckPolicy q;
    q.calibrate(bad, 0.01, 1000);
    q.calibrate(0.01, bad, 1000);
    EXPECT_DOUBLE_EQ(q.p, q.p_max) << bad;
  }
  // The first runs are checked whatever p became; later ones follow the draw.
  EXPECT_TRUE(p.checked(0, 0.99));
  EXPECT_TRUE(p.checked(2, 0.99));
  EXPECT_TRUE(p.checked(50, 0.01));
  EXPECT_FALSE(p.checked(50, 0.03));
  // At p_min, a kernel wrong on half of 1000 runs is still caught but for odds under 1e-4.
  EXPECT_LT(std::pow(1 - p.p_min, 500), 1e-4);
}

// However expensive a re-check, p keeps min_random_checks expected draws within the runs the
// bounds allow: an interleaved round capped at 10 samples keeps p_max, 1000 runs allow p_min.
TEST(FreshInputs, RecheckRateKeepsEnoughDrawsWithinTheSampleBounds) {
  RecheckPolicy p;
  p.calibrate(0.003, 0.4, 10);
  EXPECT_DOUBLE_EQ(p.p, p.p_max);
  p.calibrate(0.003, 0.4, 103);  // 100 draws: 12 expected at p = 0.12
  EXPECT_DOUBLE_EQ(p.p, 0.12);
  p.calibrate(0.003, 0.4, 1000);
  EXPECT_DOUBLE_EQ(p.p, p.p_min);
  EXPECT_GE(p.p * (1000 - p.always_first), 12 * 0.99);
}

// A kernel honest on the always-checked runs and wrong on every later one, with perfectly quiet
// samples (the noise target is met at 10), through the harness's own stop decision and rate.
// Without the guard, at p = 0.02 it would face ~0.14 draws and usually pass; with it, the noise
// target cannot end sampling before min_random_checks later runs were drawn, every one of which
// catches it. A run capped at 10 samples (an interleaved round) keeps p_max from calibrate().
TEST(FreshInputs, QuietSamplesDoNotEndSamplingBeforeEnoughRandomRechecks) {
  const auto trials = [](StopRuleConfig cfg, bool guard) {
    RecheckPolicy policy;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0, 1);
    int caught = 0;
    for (int trial = 0; trial < 200; ++trial) {
      policy.p = policy.p_max;
      StopRule rule(cfg);
      std::size_t random_checks = 0;
      std::string stop;
      for (std::size_t i = 0; stop.empty(); ++i) {
        if (policy.checked(i, u(rng)) && i >= policy.always_first) ++random_checks;
        // An expensive reference: a re-check costs as much as 100 runs.
        if (i + 1 == policy.always_first) policy.calibrate(0.001, 0.1, static_cast<double>(cfg.max_samples));
        const std::string raw = rule.add(100.0, 0.0);
        stop = guard ? guarded_stop(raw, rule, 0.0, policy, random_checks) : raw;
      }
      if (guard && stop == "noise_target") {
        EXPECT_GE(random_checks, policy.min_random_checks);
      }
      caught += random_checks > 0;  // any re-check past the first runs lands on a wrong run
    }
    return caught;
  };
  EXPECT_LT(trials(StopRuleConfig{10, 100000, 0.5, 1e9}, false), 100) << "the window the guard closes";
  EXPECT_EQ(trials(StopRuleConfig{10, 100000, 0.5, 1e9}, true), 200);
  // Capped at 10 samples: p stays 0.25, 7 draws per round; missed only if all 7 miss (0.75^7).
  const int capped = trials(StopRuleConfig{10, 10, 0.5, 1e9}, true);
  EXPECT_GT(capped, 200 * (1 - std::pow(0.75, 7)) - 20);
  // The hard bounds still hold while random re-checks are awaited.
  StopRule rule(StopRuleConfig{10, 20, 0.5, 5});
  RecheckPolicy policy;
  for (int i = 0; i < 19; ++i) rule.add(100.0, 0.0);
  EXPECT_EQ(guarded_stop("noise_target", rule, 0.0, policy, 0), "");
  EXPECT_EQ(guarded_stop("noise_target", rule, 5.0, policy, 0), "max_time");
  EXPECT_EQ(guarded_stop("noise_target", rule, 0.0, policy, 12), "noise_target");
  rule.add(100.0, 0.0);
  EXPECT_EQ(guarded_stop("noise_target", rule, 0.0, policy, 0), "max_samples");
}

TEST(Floors, DenseTensorPeaksPerDtype) {
  // H100 SXM: 132 SMs at 1980 MHz: fp16 1070 TFLOP/s (989 at the 1830 MHz NVIDIA quotes),
  // fp8 twice that; 3352 GB/s.
  const Peaks fp16 = device_peaks("sm_90", 132, 1980, 3352, false);
  const Peaks fp8 = device_peaks("sm_90", 132, 1980, 3352, true);
  EXPECT_NEAR(fp16.tflops, 1070.5, 0.5);
  EXPECT_NEAR(fp8.tflops, 2141.0, 0.5);
  EXPECT_EQ(fp16.tflops_basis, "fp16 dense tensor");
  EXPECT_NEAR(device_peaks("sm_89", 58, 2040, 300, false).tflops, 121.2, 0.1);  // L4
  EXPECT_NEAR(device_peaks("sm_80", 108, 1410, 1555, false).tflops, 312.0, 0.5);  // A100
  EXPECT_EQ(dense_flops_per_sm_clock("sm_52", false), 0);
  EXPECT_EQ(dense_flops_per_sm_clock("gfx1151", true), 512);  // no fp8 math on RDNA3.5
}

TEST(Floors, Over95PercentOfAPeakIsSuspect) {
  const Peaks p = device_peaks("sm_90", 132, 1980, 3352, false);
  // The field case: 818 TFLOP/s claimed by a one-thread-per-row kernel (76 % of fp16 peak is
  // not by itself impossible; its activity span exposes it). 1,050 TFLOP/s (98 %) is.
  const double flops = 1.07e9 * 1000;  // 1.07 TFLOP of work
  EXPECT_EQ(judge_floor(1070.0 / 0.818 * 1.0, flops, 0, p).suspect, "");
  const FloorJudgement j = judge_floor(1019.0, flops, 0, p);
  EXPECT_NEAR(j.tflops_frac, flops / (1019.0 * 1e6) / p.tflops, 1e-9);
  EXPECT_NE(j.suspect.find("fp16 dense tensor peak"), std::string::npos) << j.suspect;
  // Bandwidth: 96 % of 3352 GB/s.
  const FloorJudgement b = judge_floor(100.0, 0, 0.96 * 3352 * 100 * 1e3, p);
  EXPECT_NEAR(b.gbs_frac, 0.96, 1e-9);
  EXPECT_NE(b.suspect.find("memory bandwidth"), std::string::npos);
  EXPECT_EQ(judge_floor(100.0, 0, 0.5 * 3352 * 100 * 1e3, p).suspect, "");
}

TEST(GateStrength, MeanOfVIsTheAverageOfTheVisibleKeys) {
  const AttentionShape s{1, 1, 3, 2};
  const std::vector<double> v = {1, 2, 3, 4, 5, 6};
  const auto full = mean_of_v_output(s, v, false);
  EXPECT_EQ(full, (std::vector<float>{3, 4, 3, 4, 3, 4}));
  const auto causal = mean_of_v_output(s, v, true);
  EXPECT_EQ(causal, (std::vector<float>{1, 2, 2, 3, 3, 4}));
}

TEST(GateStrength, LooseMaxAbsLetsMeanOfVPassAndIsRefused) {
  // A reference close to the mean of V (what long sequences with near-uniform softmax give):
  // within 0.05 of it everywhere.
  const AttentionShape s{1, 2, 64, 8};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(s.elements());
  for (auto& x : v) x = u(rng);
  const auto mv = mean_of_v_output(s, v, false);
  std::vector<double> ref(mv.size());
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = mv[i] + 0.05 * u(rng);
  std::vector<DoNothing> outs = {{"an all-zeros output", std::vector<float>(ref.size(), 0.0f)},
                                 {"the mean of V", mv}};
  Tolerance loose;
  loose.max_abs = 0.06;  // seed 000's bound
  std::vector<std::pair<std::string, Metrics>> scores;
  const std::string why = gate_strength_failure(ref, outs, loose, &scores);
  EXPECT_NE(why.find("the mean of V passes"), std::string::npos) << why;
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_LE(scores[1].second.max_abs, 0.05 + 1e-6);
  // A relative-L2 bound well under what the mean of V scores refuses neither.
  Tolerance tight;
  tight.rel_l2 = 0.01;
  EXPECT_EQ(gate_strength_failure(ref, outs, tight), "");
}

TEST(GateStrength, ZerosPassALooseAbsoluteBoundOnSmallOutputs) {
  const std::vector<double> ref = {0.01, -0.02, 0.015, 0.0};
  std::vector<DoNothing> outs = {{"an all-zeros output", std::vector<float>(4, 0.0f)}};
  Tolerance t;
  t.atol = 0.05;
  t.rtol = 0.0;
  EXPECT_NE(gate_strength_failure(ref, outs, t).find("all-zeros output passes"), std::string::npos);
  t.atol = 1e-3;
  EXPECT_EQ(gate_strength_failure(ref, outs, t), "");
}

}  // namespace
}  // namespace kfleet::harness
