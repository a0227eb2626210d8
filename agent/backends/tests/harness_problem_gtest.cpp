// A job on a generic problem of the library: the harness's options in every stage carry the
// resolved problem (--problem-spec FILE --case NAME) and none of a family's flags, and the
// agent resolves the problem only in its own library.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "../../../common/tests/test_paths.hpp"
#include "common/harness_problem.hpp"
#include "common/harness_protocol.hpp"
#include "options.hpp"  // the harness's own command-line parser (kernels/harness/cpu)

namespace kb = kfleet::backends;
namespace fs = std::filesystem;

namespace {

kfleet::JobSpec rmsnorm_job() {
  auto p = kfleet::parse_job_spec(
      "name: r\ntarget: {gpu: H100}\n"
      "kernel: {problem: rmsnorm@2, language: cuda, sources: [k.cu], params: {softmax_scale: 2, bias: true, workspace_mib: 128}}\n"
      "gates:\n  correctness: {cases: [{name: small, seeds: [0, 1]}, {name: llama3_8b, seeds: [7]}, {name: stress}]}\n"
      "  performance: {case: llama3_8b}\n"
      "benchmark: {min_samples: 20}\n",
      "r.yaml");
  EXPECT_TRUE(p.ok()) << p.error_text();
  return *p.spec;
}

}  // namespace

TEST(HarnessProblem, EveryStagePassesTheResolvedProblemInsteadOfFamilyFlags) {
  const auto s = rmsnorm_job();
  const std::string spec = "/cache/problem-specs/rmsnorm@2.0123456789abcdef.spec";
  EXPECT_EQ(kb::harness_correctness_args(s, s.gates.correctness->cases[0], spec),
            (std::vector<std::string>{"correctness", "--case", "small", "--problem-spec", spec,
                                      "--workspace-mib", "128", "--seeds", "0,1"}));
  const auto bench = kb::harness_benchmark_args(s, *kb::benchmark_case(s), spec);
  ASSERT_GE(bench.size(), 5u);
  EXPECT_EQ((std::vector<std::string>(bench.begin(), bench.begin() + 5)),
            (std::vector<std::string>{"benchmark", "--case", "llama3_8b", "--problem-spec", spec}));
  for (const char* family_flag : {"--shape", "--dtype", "--atol", "--rtol", "--max-abs", "--rel-l2",
                                  "--causal", "--softmax-scale", "--bias", "--b-layout"}) {
    EXPECT_EQ(std::count(bench.begin(), bench.end(), family_flag), 0) << family_flag;
  }
  auto has = [&](const std::string& k, const std::string& v) {
    for (std::size_t i = 0; i + 1 < bench.size(); ++i)
      if (bench[i] == k && bench[i + 1] == v) return true;
    return false;
  };
  EXPECT_TRUE(has("--seed", "7"));
  EXPECT_TRUE(has("--min-samples", "20"));
}

TEST(HarnessProblem, AFamilyJobNamingItsProblemKeepsTheFamilyFlags) {
  auto p = kfleet::parse_job_spec(
      "name: a\ntarget: {gpu: H100}\nkernel: {problem: attention@2, language: cuda, sources: [k.cu]}\n"
      "gates: {correctness: {dtype: fp16, cases: [{name: s, shape: {B: 1, H: 2, S: 128, D: 64}}]}}\n",
      "a.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  const auto a = kb::harness_correctness_args(*p.spec, p.spec->gates.correctness->cases[0], "");
  EXPECT_EQ(a, (std::vector<std::string>{"correctness", "--case", "s", "--shape", "B=1,H=2,S=128,D=64",
                                         "--dtype", "fp16"}));
}

// A case without a shape in a job naming a family's problem is the problem's: its shape,
// scalars, check and draws, from the agent's library; the job's dtype and tolerance do not apply.
TEST(HarnessProblem, AFamilyProblemsOwnCaseTakesTheProblemsShapeCheckAndDraws) {
  auto p = kfleet::parse_job_spec(
      "name: a\ntarget: {gpu: H100}\nkernel: {problem: attention@2, language: cuda, sources: [k.cu]}\n"
      "gates: {correctness: {tolerance: {atol: 1}, cases: [{name: s, shape: {B: 1, H: 2, S: 128, D: 64}}, "
      "{name: stress, seeds: [0, 1]}]}}\n",
      "a.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  const std::string lib = (kfleet::testing::source_dir() / "kernels/problems").string();
  auto cases = kb::family_problem_case_args(lib, p.spec->kernel);
  ASSERT_TRUE(cases.ok()) << cases.error().message;
  const auto a = kb::harness_correctness_args(*p.spec, p.spec->gates.correctness->cases[1], "", *cases);
  EXPECT_EQ(a, (std::vector<std::string>{
                   "correctness", "--case", "stress", "--shape", "B=1,H=4,S=256,D=64", "--causal",
                   "--softmax-scale", "0.125", "--atol", "0.001", "--rtol", "0.001", "--rel-l2", "0.01",
                   "--init", "k=normal/mean=0/std=1/outliers=2,10,50/at=5,37",
                   "--init", "q=normal/mean=0/std=1/outliers=2,10,50/at=5,37",
                   "--init", "v=normal/mean=0/std=1", "--seeds", "0,1"}));
  // The job's own case keeps the job's flags, as before.
  const auto own = kb::harness_correctness_args(*p.spec, p.spec->gates.correctness->cases[0], "", *cases);
  EXPECT_EQ(own, (std::vector<std::string>{"correctness", "--case", "s", "--shape", "B=1,H=2,S=128,D=64",
                                           "--atol", "1"}));
  // A family job without problem: has none.
  kfleet::KernelSpec fam;
  fam.family = "attention";
  auto none = kb::family_problem_case_args(lib, fam);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// scaled_mm@4's n8192 case widens atol for K = 8192 (problem.yaml), its stress case adds
// dot_rtol; its other cases keep the output's 0.01. What reaches the harness is each case's own
// bound.
TEST(HarnessProblem, AFamilyCasesOwnBoundsReachTheHarness) {
  kfleet::KernelSpec k;
  k.problem = k.family = "scaled_mm";  // a family job naming its problem
  k.problem_version = 4;
  const std::string lib = (kfleet::testing::source_dir() / "kernels/problems").string();
  auto cases = kb::family_problem_case_args(lib, k);
  ASSERT_TRUE(cases.ok()) << cases.error().message;
  auto flag = [&](const std::string& c, const std::string& f) {
    const auto& a = cases->at(c);
    const auto it = std::find(a.begin(), a.end(), f);
    return it == a.end() || it + 1 == a.end() ? std::string("(none)") : *(it + 1);
  };
  EXPECT_EQ(flag("n8192", "--atol"), "0.028000000000000001");  // %.17g: the double itself
  EXPECT_EQ(flag("n8192", "--rtol"), "0.01");
  EXPECT_EQ(flag("n1024", "--atol"), "0.01");
  EXPECT_EQ(flag("stress", "--atol"), "0.01");
  EXPECT_EQ(flag("stress", "--dot-rtol"), "0.001");
  EXPECT_EQ(flag("n1024", "--dot-rtol"), "(none)");
}

TEST(HarnessProblem, AProblemMissingFromTheAgentsLibraryIsTheFleetsFailure) {
  const std::string lib = (kfleet::testing::source_dir() / "kernels/problems").string();
  const fs::path out = fs::temp_directory_path() / ("kfleet-problem-spec-" + std::to_string(::getpid()));
  auto k = rmsnorm_job().kernel;
  k.problem = "rmsnrom";
  auto r = kb::problem_spec_file(lib, k, out.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("this agent's problem library (" + lib + ") has no problem 'rmsnrom'"),
            std::string::npos) << r.error().message;
  k.problem = "rmsnorm";
  k.problem_version = 9;
  r = kb::problem_spec_file(lib, k, out.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("has rmsnorm@2, not rmsnorm@9"), std::string::npos) << r.error().message;
  // Where the resolved problem goes: a file of the agent's, read-only to everyone.
  k.problem_version = 2;
  r = kb::problem_spec_file(lib, k, out.string());
  ASSERT_TRUE(r.ok()) << r.error().message;
  struct stat st {};
  ASSERT_EQ(::lstat(r->c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0444u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(fs::path(*r).parent_path(), out);
  EXPECT_EQ(fs::path(*r).filename().string().rfind("rmsnorm@2.", 0), 0u) << *r;
  {
    // What kfleet-problem-spec writes for the same problem: the harness's own reader's input.
    std::ifstream in(*r);
    std::string first;
    std::getline(in, first);
    EXPECT_EQ(first, "kfleet-problem-spec 2");
  }
  EXPECT_EQ(kb::problem_spec_file(lib, k, out.string()).value(), *r);  // reused, the same text
  // A file someone else could have written (writable) is not reused: written anew.
  ::chmod(r->c_str(), 0644);
  EXPECT_EQ(kb::problem_spec_file(lib, k, out.string()).value(), *r);
  ASSERT_EQ(::lstat(r->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0444u);
  std::error_code ec;
  fs::remove_all(out, ec);
}

// What the agent passes is what the harness takes: every stage's command line for a problem's
// job, as run_child completes it for the recorder and for the measuring process, goes through
// the harness's own parser (kernels/harness/cpu/options.cpp) without an error.
TEST(HarnessProblem, TheHarnessTakesTheAgentsCommandLines) {
  const auto s = rmsnorm_job();
  const std::string spec = "/cache/problem-specs/rmsnorm@2.0123456789abcdef.spec";
  std::vector<std::vector<std::string>> stages = {
      kb::harness_correctness_args(s, s.gates.correctness->cases[0], spec),
      kb::harness_benchmark_args(s, *kb::benchmark_case(s), spec)};
  auto round = kb::harness_benchmark_args(s, *kb::benchmark_case(s), spec);
  round.insert(round.end(), {"--max-samples", "10", "--warmup-min-s", "0.5"});  // interleaved rounds
  stages.push_back(round);
  for (const auto& stage : stages) {
    for (const std::vector<std::string>& tail :
         {std::vector<std::string>{"--record", "/run/launches-1.txt", "--device", "0"},
          std::vector<std::string>{"--replay", "/run/launches-1.txt", "--device-code", "/c/k.o",
                                   "--device", "0", "--throttle-pct", "0", "--result-fd", "3"}}) {
      std::vector<std::string> argv = {"kfleet-measure"};
      argv.insert(argv.end(), stage.begin(), stage.end());
      argv.insert(argv.end(), tail.begin(), tail.end());
      std::vector<const char*> c;
      for (const auto& a : argv) c.push_back(a.c_str());
      kfleet::harness::Options o;
      EXPECT_EQ(kfleet::harness::parse_options(static_cast<int>(c.size()), c.data(), &o), "")
          << ::testing::PrintToString(argv);
      EXPECT_EQ(o.problem_spec, spec);
      EXPECT_EQ(o.workspace_mib, 128);
      EXPECT_TRUE(o.family_option.empty()) << o.family_option;
    }
  }
}

