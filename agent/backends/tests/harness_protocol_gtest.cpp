#include <signal.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "common/harness_protocol.hpp"

namespace kb = kfleet::backends;
using kfleet::JobSpec;

namespace {

JobSpec fp8_attention() {
  JobSpec s;
  s.kernel.family = "attention";
  s.kernel.params = {{"softmax_scale", 0.125}};
  kfleet::CorrectnessGate g;
  g.dtype = {{"q", "fp16"}, {"kv", "fp8_e4m3"}, {"out", "fp16"}};
  g.tolerance.max_abs = 0.06;
  kfleet::CorrectnessCase small{"small", {}, {0, 1, 2}, true};
  small.shape.dims = {{"B", 1}, {"H", 4}, {"S", 256}, {"D", 64}};
  kfleet::CorrectnessCase mission{"mission", {}, {3}, false};
  mission.shape.dims = {{"B", 4}, {"H", 16}, {"S", 2048}, {"D", 64}};
  g.cases = {small, mission};
  s.gates.correctness = g;
  return s;
}

}  // namespace

TEST(HarnessProtocol, CorrectnessCommandLineFollowsTheSpec) {
  auto s = fp8_attention();
  auto a = kb::harness_correctness_args(s, s.gates.correctness->cases[0]);
  std::vector<std::string> want = {"correctness", "--case", "small", "--shape", "B=1,H=4,S=256,D=64",
                                   "--dtype", "kv=fp8_e4m3,out=fp16,q=fp16", "--max-abs", "0.06",
                                   "--causal", "--softmax-scale", "0.125", "--seeds", "0,1,2"};
  EXPECT_EQ(a, want);
}

TEST(HarnessProtocol, BenchmarkUsesThePerformanceCaseAndBenchmarkSection) {
  auto s = fp8_attention();
  s.benchmark.l2_flush = false;
  s.benchmark.min_samples = 20;
  auto c = kb::benchmark_case(s);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "mission");  // no performance gate: the last (mission) case
  kfleet::PerformanceGate p;
  p.case_name = "small";
  s.gates.performance = p;
  EXPECT_EQ(kb::benchmark_case(s)->name, "small");
  auto a = kb::harness_benchmark_args(s, *kb::benchmark_case(s));
  EXPECT_EQ(a[0], "benchmark");
  auto has = [&](const std::string& k, const std::string& v) {
    for (std::size_t i = 0; i + 1 < a.size(); ++i)
      if (a[i] == k && a[i + 1] == v) return true;
    return false;
  };
  EXPECT_TRUE(has("--seed", "0"));
  EXPECT_TRUE(has("--min-samples", "20"));
  EXPECT_NE(std::find(a.begin(), a.end(), "--no-l2-flush"), a.end());
  EXPECT_FALSE(kb::benchmark_case(JobSpec{}).has_value());
}

TEST(HarnessProtocol, ParsesLinesAndClassifiesEndings) {
  EXPECT_FALSE(kb::parse_harness_line("warming up").has_value());
  EXPECT_FALSE(kb::parse_harness_line("{\"no_type\":1}").has_value());
  kb::HarnessReport rep;
  rep.add(*kb::parse_harness_line(R"j({"type":"device","name":"NVIDIA L4"})j"));
  rep.add(*kb::parse_harness_line(R"j({"type":"correctness","case":"small","seed":2,"pass":false,"reason":"input K was modified by the kernel"})j"));
  bool infra = true;
  EXPECT_EQ(kb::harness_failure(1, 0, false, 60, rep, "", infra),
            "case small seed 2: input K was modified by the kernel");
  EXPECT_FALSE(infra);
  EXPECT_EQ(kb::harness_failure(0, 0, false, 60, rep, "", infra), "");
  EXPECT_EQ(kb::harness_failure(-1, SIGBUS, false, 60, rep, "", infra), "harness crashed (SIGBUS)");

  kb::HarnessReport kernel_err;
  kernel_err.add(*kb::parse_harness_line(R"j({"type":"error","phase":"kernel","call":"cudaDeviceSynchronize()","message":"an illegal memory access was encountered"})j"));
  EXPECT_EQ(kb::harness_failure(3, 0, false, 60, kernel_err, "", infra),
            "kernel error: cudaDeviceSynchronize(): an illegal memory access was encountered");
  EXPECT_FALSE(infra);
  kb::HarnessReport setup_err;
  setup_err.add(*kb::parse_harness_line(R"j({"type":"error","phase":"setup","call":"cudaMalloc","message":"out of memory"})j"));
  kb::harness_failure(3, 0, false, 60, setup_err, "", infra);
  EXPECT_TRUE(infra);  // the host's problem, not the kernel's
  EXPECT_NE(kb::harness_failure(-1, SIGKILL, true, 30, rep, "", infra).find("timed out after 30 s"),
            std::string::npos);

  // A benchmark with no samples left says why instead of a bare "exit 1": a throttled GPU is
  // the host's problem, a declined case the kernel's.
  kb::HarnessReport throttled;
  throttled.add(*kb::parse_harness_line(R"j({"type":"bench","case":"mission","unsupported":true,"reason":"every sample ran with the SM clock over 2 % below its best (1980 MHz): the GPU is throttled; let it cool or pass --throttle-pct 0"})j"));
  const auto why = kb::harness_failure(1, 0, false, 60, throttled, "", infra);
  EXPECT_NE(why.find("benchmark gave no result: every sample"), std::string::npos) << why;
  EXPECT_NE(why.find("kfleet-agent --throttle-pct"), std::string::npos) << why;
  EXPECT_TRUE(infra);
  kb::HarnessReport declined;
  declined.add(*kb::parse_harness_line(R"j({"type":"bench","case":"mission","unsupported":true,"reason":"kernel returned status 1 for this case"})j"));
  EXPECT_EQ(kb::harness_failure(1, 0, false, 60, declined, "", infra),
            "benchmark gave no result: kernel returned status 1 for this case");
  EXPECT_FALSE(infra);
}

// A Python kernel's recorder is the job's process: what it says it launched is kept as its report,
// with only the recorder's fields, bounded, and an origin that is "job" unless it says "library".
TEST(HarnessProtocol, TheRecordersKernelsAreItsReportBoundedAndShaped) {
  EXPECT_TRUE(kb::recorded_kernels({}).is_null());
  EXPECT_TRUE(kb::recorded_kernels({{{"type", "recorded"}, {"lists", 1}}}).is_null());
  nlohmann::json many = nlohmann::json::array();
  many.push_back({{"function", "fill_kernel"}, {"image", "lib-0.cubin"}, {"origin", "library"},
                  {"file", "libtorch_cuda.so"}, {"package", "torch 2.11.0"}, {"how", ""}, {"extra", "x"}});
  many.push_back({{"function", "attn_fwd"}, {"origin", "trusted-by-kfleet"}, {"file", std::string(5000, 'a')}});
  many.push_back({{"function", 7}});  // no name: left out
  many.push_back("not an object");
  for (int i = 0; i < 300; ++i) many.push_back({{"function", "k" + std::to_string(i)}});
  const auto k = kb::recorded_kernels({{{"type", "log"}}, {{"type", "recorded"}, {"kernels", many}}});
  ASSERT_TRUE(k.is_object());
  EXPECT_EQ(k["type"], "kernels");
  EXPECT_EQ(k["reported_by"], "recorder");
  ASSERT_EQ(k["kernels"].size(), 256u);
  EXPECT_EQ(k["more"], 302 - 256);
  EXPECT_EQ(k["kernels"][0], (nlohmann::json{{"function", "fill_kernel"}, {"image", "lib-0.cubin"},
                                              {"origin", "library"}, {"file", "libtorch_cuda.so"},
                                              {"package", "torch 2.11.0"}, {"how", ""}}));
  EXPECT_EQ(k["kernels"][1]["origin"], "job");
  EXPECT_EQ(k["kernels"][1]["file"].get<std::string>().size(), 256u);
  EXPECT_EQ(k["kernels"][2]["function"], "k0");
}

// Found by the agent_output fuzz target (tests/fuzz/corpus/agent_output/regression-*.txt): the
// kernel runs inside the harness and can print any line, and members of another type made
// harness_failure throw nlohmann's type_error, which nothing in the agent catches.
TEST(HarnessProtocol, MembersOfAnotherTypeAreReadAsAbsent) {
  kb::HarnessReport rep;
  rep.add(*kb::parse_harness_line(R"j({"type":"correctness","case":5,"seed":"x","pass":"no","reason":[1]})j"));
  rep.add(*kb::parse_harness_line(R"j({"type":"bench","recheck":"no","suspect":1,"unsupported":"yes","reason":7})j"));
  bool infra = true;
  std::string why;
  ASSERT_NO_THROW(why = kb::harness_failure(1, 0, false, 60, rep, "", infra));
  EXPECT_EQ(why, "case ? seed 0: failed");  // "pass" that is not a boolean is no pass
  kb::HarnessReport err;
  err.add(*kb::parse_harness_line(R"j({"type":"error","phase":["kernel"],"call":{},"message":null})j"));
  ASSERT_NO_THROW(why = kb::harness_failure(3, 0, false, 60, err, "", infra));
  EXPECT_EQ(why, "harness error: : ");
  EXPECT_TRUE(infra);
}

TEST(HarnessProtocol, SuspectTimingAndFailedRecheckAreTheKernelsFailure) {
  bool infra = true;
  kb::HarnessReport suspect;
  suspect.add(*kb::parse_harness_line(
      R"j({"type":"bench","case":"mission","suspect":true,"suspect_reason":"timed run 0: work outside the timing events","recheck":{"pass":true}})j"));
  const std::string why = kb::harness_failure(1, 0, false, 60, suspect, "", infra);
  EXPECT_NE(why.find("suspect: timed run 0: work outside the timing events"), std::string::npos) << why;
  EXPECT_FALSE(infra);
  // A persistent kernel: the harness names it in a bench line and exits 1.
  kb::HarnessReport persistent;
  persistent.add(*kb::parse_harness_line(
      R"j({"type":"bench","case":"mission","suspect":true,"suspect_reason":"the device did not go idle within 10 s after the launch returned: a persistent kernel or work left running past the stop event"})j"));
  EXPECT_NE(kb::harness_failure(1, 0, false, 60, persistent, "", infra).find("persistent kernel"),
            std::string::npos);
  kb::HarnessReport recheck;
  recheck.add(*kb::parse_harness_line(
      R"j({"type":"bench","case":"mission","suspect":false,"recheck":{"pass":false,"reason":"timed run 5: 4096 elements outside atol/rtol"}})j"));
  EXPECT_EQ(kb::harness_failure(1, 0, false, 60, recheck, "", infra),
            "outputs of timed runs failed the re-check: timed run 5: 4096 elements outside atol/rtol");
  EXPECT_FALSE(infra);
  // A refused tolerance (gate strength) comes back as a failed correctness case.
  kb::HarnessReport weak;
  weak.add(*kb::parse_harness_line(
      R"j({"type":"correctness","case":"mission","seed":0,"pass":false,"refused":true,"reason":"refused: the tolerance is too loose to tell a kernel from a do-nothing output: the mean of V passes it"})j"));
  EXPECT_NE(kb::harness_failure(1, 0, false, 60, weak, "", infra).find("mean of V passes"),
            std::string::npos);
}

TEST(HarnessProtocol, ReplayRefusalsAreTheKernelsFailureAndSayWhatWasSeen) {
  bool infra = true;
  kb::HarnessReport recorded;
  recorded.add(*kb::parse_harness_line(
      R"j({"type":"error","phase":"record","recording":"correctness seed 0","message":"replay mode refused the launch (correctness seed 0): the launch enqueued a host function node (cudaLaunchHostFunc or a callback): replay runs only kernels, memsets and device copies"})j"));
  const std::string why = kb::harness_failure(4, 0, false, 60, recorded, "", infra);
  EXPECT_EQ(why.rfind("replay mode refused the launch (correctness seed 0): ", 0), 0u) << why;
  EXPECT_NE(why.find("host function node"), std::string::npos);
  EXPECT_FALSE(infra);
  kb::HarnessReport replayed;
  replayed.add(*kb::parse_harness_line(
      R"j({"type":"error","phase":"replay","message":"replay mode refused the recording: the launch list names kernel _Z3fooPf, which is not in the job's device code"})j"));
  infra = true;
  EXPECT_NE(kb::harness_failure(4, 0, false, 60, replayed, "", infra).find("not in the job's device code"),
            std::string::npos);
  EXPECT_FALSE(infra);
}

// Every reader the agent uses on a job process's lines takes a member of another type as absent
// instead of throwing (a throw there would end the agent, not the job).
TEST(HarnessProtocol, TypedReadersNeverThrowOnAStrangersTypes) {
  const auto j = nlohmann::json::parse(
      R"({"type":5,"case":5,"pass":"no","samples":"x","suspect":1,"message":[1]})");
  EXPECT_EQ(kb::string_at(j, "case", "?"), "?");
  EXPECT_EQ(kb::string_at(j, "type", ""), "");
  EXPECT_FALSE(kb::bool_at(j, "pass", false));
  EXPECT_TRUE(kb::bool_at(j, "suspect", true));
  EXPECT_TRUE(kb::array_at(j, "samples").empty());
  EXPECT_EQ(kb::int_at(j, "case", 7), 5);
  EXPECT_EQ(kb::string_at(nlohmann::json::array(), "case", "none"), "none");
  kb::HarnessReport rep;
  rep.add(j);  // a "type" that is not a string is no line of any kind
  EXPECT_FALSE(rep.bench || rep.error || rep.device);
  EXPECT_EQ(kb::bench_no_result_cause(rep), "");
}
