// A kernel against kfleet's PyTorch references: the line a verdict's reason ends with, the
// cache key as shown, which jobs are compared, and fast_p over a set of kernels.
#include <gtest/gtest.h>

#include "kfleet/common/versus.hpp"

namespace kfleet {
namespace {

BaselineComparison timed(const char* baseline, double s, double lo, double hi) {
  BaselineComparison c;
  c.baseline = baseline;
  c.speedup = s;
  c.ci_low = lo;
  c.ci_high = hi;
  c.case_name = "llama3_8b";
  return c;
}

BaselineComparison untimed(const char* baseline, const char* note) {
  BaselineComparison c;
  c.baseline = baseline;
  c.case_name = "llama3_8b";
  c.note = note;
  return c;
}

TEST(VersusLine, ReadsAsTheSpeedupsWithTheirIntervalsAndTheCase) {
  const std::vector<BaselineComparison> v = {timed(kBaselineEager, 0.93, 0.92, 0.94),
                                             timed(kBaselineCompile, 1.41, 1.39, 1.43)};
  EXPECT_EQ(versus_line(v), "0.93x eager [0.92, 0.94], 1.41x torch.compile [1.39, 1.43] (llama3_8b)");
  // The JSON a verdict carries reads the same.
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& c : v) arr.push_back(to_json(c));
  EXPECT_EQ(versus_line(arr), versus_line(v));
  EXPECT_EQ(versus_line(std::vector<BaselineComparison>{}), "");
  EXPECT_EQ(versus_line(nlohmann::json("not an array")), "");
}

TEST(VersusLine, AReferenceNotTimedSaysWhyAndSimulatedIsMarked) {
  auto eager = timed(kBaselineEager, 2.5, 2.4, 2.6);
  eager.simulated = true;
  auto compile = untimed(kBaselineCompile, "torch.compile failed on this agent: no triton");
  EXPECT_EQ(versus_line({eager, compile}),
            "2.50x eager [2.40, 2.60], torch.compile not timed (torch.compile failed on this "
            "agent: no triton) (llama3_8b, simulated)");
  // Two samples give a point and no interval.
  BaselineComparison point;
  point.baseline = kBaselineEager;
  point.speedup = 1.0;
  EXPECT_EQ(format_comparison(point), "1.00x eager");
}

TEST(VersusKey, ShowsWhatTheTimingIsCachedBy) {
  const nlohmann::json key = {{"problem", "rmsnorm"}, {"version", 1}, {"case", "llama3_8b"},
                              {"gpu_class", "H200"}, {"torch", "2.11.0+cu130"}, {"triton", "3.6.0"},
                              {"driver", "580.95.05"}, {"measurer", "1a2b3c4d5e6f7a8b"}};
  EXPECT_EQ(versus_key_text(key), "rmsnorm@1 case llama3_8b on H200, torch 2.11.0+cu130, triton 3.6.0, "
                                  "driver 580.95.05, measurer 1a2b3c4d5e6f7a8b");
  // A family's job (no problem version): what is there.
  EXPECT_EQ(versus_key_text({{"problem", "attention"}, {"case", "mission"}, {"gpu_class", "L4"}}),
            "attention case mission on L4");
  // A family's reference is keyed with version 0 (it has none): no "@0".
  EXPECT_EQ(versus_key_text({{"problem", "scaled_mm"}, {"version", 0}, {"case", "mission"}}),
            "scaled_mm case mission");
  EXPECT_EQ(versus_key_text(nlohmann::json()), "");
}

TEST(ProblemKernel, LibraryProblemsAndBothFamiliesButNotCustomOrBareJobs) {
  KernelSpec k;
  k.problem = "rmsnorm";
  EXPECT_TRUE(is_problem_kernel(k));
  k = {};
  k.family = "attention";
  EXPECT_TRUE(is_problem_kernel(k));
  k.family = "scaled_mm";
  EXPECT_TRUE(is_problem_kernel(k));
  k.family = "custom";
  EXPECT_FALSE(is_problem_kernel(k));
  EXPECT_TRUE(is_problem_kernel(nlohmann::json{{"kernel", {{"problem", "softmax"}, {"family", ""}}}}));
  EXPECT_TRUE(is_problem_kernel(nlohmann::json{{"kernel", {{"family", "attention"}}}}));
  EXPECT_FALSE(is_problem_kernel(nlohmann::json{{"kernel", {{"family", "custom"}}}}));
  EXPECT_FALSE(is_problem_kernel(nlohmann::json()));
}

TEST(VerdictCorrect, PassedOrRejectedOnlyForItsSpeed) {
  Verdict v;
  v.outcome = RunOutcome::passed;
  EXPECT_TRUE(verdict_correct(v));
  v.outcome = RunOutcome::rejected;
  v.gate = "performance";
  EXPECT_TRUE(verdict_correct(v));
  v.gate = "correctness";
  EXPECT_FALSE(verdict_correct(v));
  v.gate = "integrity";
  EXPECT_FALSE(verdict_correct(v));
  v.outcome = RunOutcome::error;
  v.gate.clear();
  EXPECT_FALSE(verdict_correct(v));
}

// Four kernels: fast against eager (1.6x), slower than eager, wrong, and one whose compile
// reference was not timed. Every one is in the denominator.
TEST(FastPJson, CountsEachBaselineAndPOverEveryKernel) {
  std::vector<VersusKernel> ks(4);
  ks[0] = {true, {timed(kBaselineEager, 1.6, 1.5, 1.7), timed(kBaselineCompile, 1.1, 1.0, 1.2)}, false};
  ks[1] = {true, {timed(kBaselineEager, 0.9, 0.8, 1.0), timed(kBaselineCompile, 0.5, 0.4, 0.6)}, false};
  ks[2] = {false, {timed(kBaselineEager, 4.0, 3.9, 4.1), timed(kBaselineCompile, 3.0, 2.9, 3.1)}, false};
  ks[3] = {true, {timed(kBaselineEager, 1.2, 1.1, 1.3), untimed(kBaselineCompile, "no triton")}, true};
  const nlohmann::json f = fast_p_json(ks, "finished kernels on a problem");
  EXPECT_EQ(f["kernels"], 4);
  EXPECT_EQ(f["of"], "finished kernels on a problem");
  EXPECT_TRUE(f["simulated"].get<bool>());
  ASSERT_EQ(f["baselines"].size(), 2u);
  const auto& eager = f["baselines"][0];
  EXPECT_EQ(eager["baseline"], "eager");
  EXPECT_EQ(eager["timed"], 4);
  EXPECT_EQ(eager["p"][0]["p"], 1.0);
  EXPECT_EQ(eager["p"][0]["fast"], 2);  // 1.6 and 1.2; 4.0 is wrong
  EXPECT_DOUBLE_EQ(eager["p"][0]["share"].get<double>(), 0.5);
  EXPECT_EQ(eager["p"][1]["p"], 1.5);
  EXPECT_EQ(eager["p"][1]["fast"], 1);
  const auto& compile = f["baselines"][1];
  EXPECT_EQ(compile["label"], "torch.compile");
  EXPECT_EQ(compile["timed"], 3);
  EXPECT_EQ(compile["p"][0]["fast"], 1);
  EXPECT_EQ(compile["p"][1]["fast"], 0);

  EXPECT_EQ(fast_p_text(f),
            "fast_1    eager 2/4 (50%)   torch.compile 1/4 (25%)\n"
            "fast_1.5  eager 1/4 (25%)   torch.compile 0/4 (0%)\n"
            "(correct and more than p times faster than kfleet's PyTorch reference; of 4 finished "
            "kernels on a problem; with a reference timing: eager 4 of 4, torch.compile 3 of 4) "
            "[simulated]\n");
  EXPECT_EQ(fast_p_text(fast_p_json({}, "x")), "");
  EXPECT_EQ(fast_p_text(nlohmann::json()), "");
}

// The simulated references' medians a job may set (tests and the demo), through YAML and its
// JSON form alike; a job that sets none keeps its content hash.
TEST(SimulatedReferences, EagerAndCompileMediansRoundTrip) {
  const std::string yaml = "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, "
                           "sources: [k.cu]}\nsimulate: {time_us: 50, eager_us: 80, compile_us: 40}\n";
  auto p = parse_job_spec(yaml, "t.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  ASSERT_TRUE(p.spec->simulate);
  EXPECT_DOUBLE_EQ(*p.spec->simulate->eager_us, 80);
  EXPECT_DOUBLE_EQ(*p.spec->simulate->compile_us, 40);
  auto back = job_spec_from_json(to_json(*p.spec));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_DOUBLE_EQ(*back->simulate->eager_us, 80);
  EXPECT_DOUBLE_EQ(*back->simulate->compile_us, 40);
  auto plain = parse_job_spec("name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, "
                              "sources: [k.cu]}\nsimulate: {time_us: 50}\n", "t.yaml");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(to_json(*plain.spec)["simulate"].contains("eager_us"));
}

}  // namespace
}  // namespace kfleet
