// Jobs that name a problem of the library (kernel.problem: NAME@VERSION): the parser's errors,
// each with its file:line:column, with and without the library at hand.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "kfleet/common/jobspec.hpp"
#include "kfleet/common/problem.hpp"
#include "test_paths.hpp"

namespace kfleet {
namespace {

const ProblemLibrary& library() {
  static const ProblemLibrary lib = load_problem_library((testing::source_dir() / "kernels/problems").string());
  return lib;
}

std::string problem_job(const std::string& kernel, const std::string& correctness,
                const std::string& performance = "") {
  return "name: p\ntarget: {gpu: H100}\nkernel: " + kernel + "\ngates:\n  correctness: " + correctness +
         "\n" + (performance.empty() ? "" : "  performance: " + performance + "\n");
}

const std::string kRms = "{problem: rmsnorm@2, language: cuda, sources: [k.cu]}";
const std::string kCases = "{cases: [{name: small, seeds: [0, 1]}, {name: llama3_8b}, {name: stress}]}";

std::string errors(const std::string& text, const ProblemLibrary* lib = &library()) {
  std::string e = parse_job_spec(text, "j.yaml", lib).error_text();
  if (!e.empty() && e.back() == '\n') e.pop_back();
  return e;
}

TEST(JobProblem, AGenericProblemJobParsesAndRoundTrips) {
  ASSERT_TRUE(library().issues.empty());
  const auto p = parse_job_spec(problem_job(kRms, kCases, "{case: llama3_8b}"), "j.yaml", &library());
  ASSERT_TRUE(p.ok()) << p.error_text();
  EXPECT_EQ(p.spec->kernel.problem, "rmsnorm");
  EXPECT_EQ(p.spec->kernel.problem_version, 2);
  EXPECT_EQ(p.spec->kernel.family, "");
  EXPECT_TRUE(is_generic_problem(p.spec->kernel));
  EXPECT_EQ(problem_ref(p.spec->kernel), "rmsnorm@2");
  ASSERT_EQ(p.spec->gates.correctness->cases.size(), 3u);
  EXPECT_TRUE(p.spec->gates.correctness->cases[0].shape.dims.empty());
  const auto j = to_json(*p.spec);
  EXPECT_EQ(j["kernel"]["problem"], "rmsnorm@2");
  EXPECT_FALSE(j["kernel"].contains("family"));
  auto back = job_spec_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(to_json(*back), j);
  EXPECT_EQ(job_content_hash(*back, "b"), job_content_hash(*p.spec, "b"));
}

TEST(JobProblem, AttentionAndScaledMmAreTheFamilies) {
  const std::string fam = "{cases: [{name: s, shape: {B: 1, H: 2, S: 128, D: 64}}, {name: stress}]}";
  for (const char* k : {"{problem: attention@2, language: cuda, sources: [k.cu]}",
                        "{problem: attention@2, family: attention, language: cuda, sources: [k.cu]}"}) {
    const auto p = parse_job_spec(problem_job(k, fam), "j.yaml", &library());
    ASSERT_TRUE(p.ok()) << p.error_text();
    EXPECT_EQ(p.spec->kernel.family, "attention");
    EXPECT_FALSE(is_generic_problem(p.spec->kernel));
    // The job's own case keeps the shape it gives; `stress`, the problem's required case, is
    // named only: its shape comes from the problem, not the job.
    const auto& cases = p.spec->gates.correctness->cases;
    ASSERT_EQ(cases.size(), 2u);
    EXPECT_EQ(cases[0].shape.dims.size(), 4u);
    EXPECT_TRUE(cases[1].shape.dims.empty());
  }
  // A family job that names no problem is unchanged, and so is its JSON form (hashes, stores).
  const auto f = parse_job_spec(problem_job("{family: attention, language: cuda, sources: [k.cu]}", "{cases: [{name: s, shape: {B: 1, H: 2, S: 128, D: 64}}]}"), "j.yaml");
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(to_json(*f.spec)["kernel"].contains("problem"));
  EXPECT_EQ(errors(problem_job("{problem: attention@2, family: scaled_mm, language: cuda, sources: [k.cu]}", fam)),
            "j.yaml:3:40: kernel.family: family: scaled_mm disagrees with problem: attention@2 "
            "(which is family attention); drop family");
  EXPECT_EQ(errors(problem_job("{problem: rmsnorm@2, family: custom, language: cuda, sources: [k.cu]}", kCases)),
            "j.yaml:3:38: kernel.family: family: custom disagrees with problem: rmsnorm@2 (a "
            "problem of the library with its own ABI, no family); drop family");
}

TEST(JobProblem, ErrorsNameTheirPlace) {
  EXPECT_EQ(errors(problem_job("{problem: rmsnorm, language: cuda, sources: [k.cu]}", kCases), nullptr),
            "j.yaml:3:19: kernel.problem: 'rmsnorm' is not NAME@VERSION (a problem of the library "
            "and its version, e.g. rmsnorm@2; `kfleet problems` lists them)");
  EXPECT_EQ(errors(problem_job("{problem: rmsnrom@2, language: cuda, sources: [k.cu]}", kCases)),
            "j.yaml:3:19: kernel.problem: no problem 'rmsnrom' in the problem library (" +
                library().root +
                "); it has attention@2, fp8_block_gemm@2, grouped_gemm@2, rmsnorm@2, rope@2, "
                "scaled_mm@4, softmax@2, topk@2; did you mean 'rmsnorm'?");
  EXPECT_EQ(errors(problem_job("{problem: rmsnorm@1, language: cuda, sources: [k.cu]}", kCases)),
            "j.yaml:3:19: kernel.problem: rmsnorm@1 is not in the problem library (" + library().root +
                "): it has rmsnorm@2 (the version pins the contract a kernel is judged by)");
  EXPECT_EQ(errors(problem_job(kRms, "{cases: [{name: stress}, {name: llama3_8B, seeds: [0]}]}")),
            "j.yaml:5:48: gates.correctness.cases[1].name: 'llama3_8B' is not a case of rmsnorm@2; "
            "its cases: small, ragged, llama3_8b, llama3_70b, stress; did you mean 'llama3_8b'?");
  EXPECT_EQ(errors(problem_job(kRms, "{cases: [{name: stress, shape: {T: 4, H: 256}}]}")),
            "j.yaml:5:47: gates.correctness.cases[0].shape: shape comes from the case of problem "
            "rmsnorm@2 that this case names; drop it (`kfleet problems show rmsnorm` lists the cases)");
  EXPECT_EQ(errors(problem_job(kRms, "{cases: [{name: stress}], tolerance: {atol: 1}}")),
            "j.yaml:5:53: gates.correctness.tolerance: problem rmsnorm@2 sets each output's check; a "
            "job may not change it, looser or tighter (a new check is a new version of the problem); "
            "drop tolerance");
  EXPECT_EQ(errors(problem_job(kRms, "{cases: [{name: stress}], dtype: fp16}")),
            "j.yaml:5:49: gates.correctness.dtype: problem rmsnorm@2 gives every tensor's dtype; drop dtype");
  EXPECT_EQ(errors(problem_job(kRms, kCases, "{case: mission}")),
            "j.yaml:6:23: gates.performance.case: names case 'mission', which gates.correctness.cases "
            "does not have; cases: small, llama3_8b, stress");
  // Triton and torch kernels of a problem: its Python launch module defines kfleet_problem_launch.
  EXPECT_EQ(errors(problem_job("{problem: rmsnorm@2, language: triton, sources: [k.py]}", kCases)), "");
  EXPECT_EQ(errors(problem_job("{problem: rmsnorm@2, language: torch, sources: [k.py, ext.cu]}", kCases)), "");
  EXPECT_EQ(errors(problem_job("{problem: rmsnorm@2, language: triton, sources: [k.cu]}", kCases)),
            "j.yaml:3:58: kernel.sources[0]: 'k.cu': a triton kernel's first source is its Python "
            "launch module (.py), which defines kfleet_problem_launch(args, stream); a .cu kernel is "
            "language: cuda");
  EXPECT_EQ(errors("name: p\ntarget: {gpu: H100}\nkernel: " + kRms + "\n"),
            "j.yaml:1:1: gates.correctness: a job on problem rmsnorm@2 needs gates.correctness with "
            "the problem's cases to run, e.g. {cases: [{name: small, seeds: [0, 1]}]}\n"
            "j.yaml:1:1: gates.correctness.cases: the job leaves out the required case 'stress' of "
            "rmsnorm@2: every job of rmsnorm@2 runs its required cases (a job may add cases and seeds, "
            "not drop one); add {name: stress, seeds: [0]} to gates.correctness.cases");
  EXPECT_NE(errors("name: p\ntarget: {gpu: H100}\nkernel: {language: cuda, sources: [k.cu]}\n", nullptr)
                .find("kernel.family: missing"),
            std::string::npos);
}

// A job naming a family's problem runs its required case as the problem's (no shape of its own);
// a job that says only family: is not a problem job and keeps its own cases.
TEST(JobProblem, AFamilyProblemsRequiredCaseIsTheProblems) {
  const std::string k = "{problem: attention@2, language: cuda, sources: [k.cu]}";
  const std::string own = "{name: s, shape: {B: 1, H: 2, S: 128, D: 64}}";
  EXPECT_EQ(errors(problem_job(k, "{cases: [" + own + ", {name: stress, seeds: [0]}]}")), "");
  EXPECT_EQ(errors(problem_job(k, "{cases: [" + own + "]}")),
            "j.yaml:5:24: gates.correctness.cases: the job leaves out the required case 'stress' of "
            "attention@2: every job of attention@2 runs its required cases (a job may add cases and seeds, "
            "not drop one); add {name: stress, seeds: [0]} to gates.correctness.cases");
  EXPECT_EQ(errors(problem_job(k, "{cases: [{name: stress, shape: {B: 1, H: 2, S: 128, D: 64}}]}")),
            "j.yaml:5:47: gates.correctness.cases[0].shape: 'stress' is a required case of attention@2: its "
            "shape, inputs and check are the problem's; drop shape (or name your own case otherwise)");
  EXPECT_EQ(errors(problem_job(k, "{cases: [{name: stres}, {name: stress}]}")),
            "j.yaml:5:32: gates.correctness.cases[0].name: 'stres' gives no shape and is not a case of "
            "attention@2; its cases: small, mission, long, stress (or give the case a shape of its own); "
            "did you mean 'stress'?");
  EXPECT_EQ(errors(problem_job("{family: attention, language: cuda, sources: [k.cu]}", "{cases: [" + own + "]}")), "");
}

// A problem's required cases: every job of it runs them. Dropping one is an error that names it,
// wherever the job is checked against the library (kfleet submit, kfleetd; the agent again).
TEST(JobProblem, ARequiredCaseCannotBeDropped) {
  EXPECT_EQ(errors(problem_job(kRms, "{cases: [{name: small, seeds: [0, 1]}, {name: llama3_8b}]}")),
            "j.yaml:5:24: gates.correctness.cases: the job leaves out the required case 'stress' of "
            "rmsnorm@2: every job of rmsnorm@2 runs its required cases (a job may add cases and seeds, "
            "not drop one); add {name: stress, seeds: [0]} to gates.correctness.cases");
  // More seeds and more cases are fine; so is the required case alone.
  EXPECT_EQ(errors(problem_job(kRms, "{cases: [{name: stress, seeds: [0, 1, 2, 3]}, {name: ragged}, {name: small}]}")), "");
  EXPECT_EQ(errors(problem_job(kRms, "{cases: [{name: stress}]}")), "");
  for (const auto& p : library().problems) {
    SCOPED_TRACE(p.name);
    if (p.abi != "generic") continue;
    EXPECT_FALSE(p.required_cases().empty()) << "every generic problem has a required case";
    JobSpec none;
    EXPECT_EQ(missing_required_cases(p, none), p.required_cases());
  }
}

TEST(JobProblem, WithoutALibraryOnlyTheFormIsChecked) {
  // The agent and the store re-read a job's JSON form with no library at hand.
  EXPECT_TRUE(parse_job_spec(problem_job("{problem: nosuch@3, language: cuda, sources: [k.cu]}",
                                 "{cases: [{name: whatever}]}"), "j.yaml").ok());
}

// jobs/problems: each of the six generic problems has its naive job, a wrong one, a do-nothing
// one and its two shortcuts, softmax and rmsnorm a Triton kernel too, all but grouped_gemm a torch
// one (torch ops: kfleet's eager reference, except rmsnorm's own; grouped_gemm's reference declines
// cases), all valid against the library (so each runs the required cases)
// and listed in expected.tsv (scripts/gpu-problems-proof.sh runs that list); the problem
// exploits of the corpus too.
TEST(JobProblem, TheExampleProblemJobsAreValidAgainstTheLibrary) {
  namespace fs = std::filesystem;
  const fs::path dir = testing::source_dir() / "jobs/problems";
  std::set<std::string> listed;
  std::ifstream tsv(dir / "expected.tsv");
  for (std::string line; std::getline(tsv, line);)
    if (!line.empty() && line[0] != '#') listed.insert(line.substr(0, line.find('\t')));
  std::set<std::string> files, problems;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".yaml") continue;
    files.insert(e.path().filename().string());
    const auto p = parse_job_spec_file(e.path().string(), &library());
    ASSERT_TRUE(p.ok()) << p.error_text();
    EXPECT_EQ(is_generic_problem(p.spec->kernel),
              p.spec->kernel.problem != "attention" && p.spec->kernel.problem != "scaled_mm") << e.path();
    problems.insert(p.spec->kernel.problem);
  }
  EXPECT_EQ(files, listed);
  // naive, wrong, do-nothing and two shortcuts per generic problem; two shortcuts per family;
  // the Triton kernels of softmax and rmsnorm; five problems as torch ops
  EXPECT_EQ(files.size(), 41u);
  EXPECT_EQ(problems, (std::set<std::string>{"rmsnorm", "softmax", "rope", "grouped_gemm", "topk", "fp8_block_gemm",
                                             "attention", "scaled_mm"}));
  const auto exploit = parse_job_spec_file(
      (testing::source_dir() / "jobs/exploits/23-rmsnorm-side-stream/job.yaml").string(), &library());
  ASSERT_TRUE(exploit.ok()) << exploit.error_text();
  EXPECT_EQ(problem_ref(exploit.spec->kernel), "rmsnorm@2");
}

}  // namespace
}  // namespace kfleet
