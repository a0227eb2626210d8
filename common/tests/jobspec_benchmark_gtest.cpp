// benchmark.interleave, processes and min_rounds: parsed, validated, kept on the wire, and left out
// of the content hash when unset so existing jobs keep theirs.
#include <gtest/gtest.h>

#include "kfleet/common/jobspec.hpp"
#include "spec_issues.hpp"

namespace kfleet {
namespace {

std::string benchmark_job(const std::string& benchmark, const std::string& compare_to) {
  return "name: t/b\nparent: t/a\ntarget: {gpu: L4}\n"
         "kernel: {family: attention, language: cuda, sources: [k.cu]}\n"
         "gates:\n  correctness: {dtype: fp16, cases: [{name: m, shape: {B: 1}}]}\n"
         "  performance: {case: m" + compare_to + "}\n"
         "benchmark: " + benchmark + "\n";
}

bool has_issue(const SpecParse& p, const std::string& field) {
  return kfleet::testing::find_issue(p, field) != nullptr;
}

TEST(JobSpecBenchmark, InterleaveAndProcessesParse) {
  auto p = parse_job_spec(benchmark_job("{interleave: true, processes: 3}", ", compare_to: parent"), "b.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  EXPECT_TRUE(p.spec->benchmark.interleave);
  EXPECT_EQ(p.spec->benchmark.processes, 3);
  auto back = job_spec_from_json(to_json(*p.spec));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->benchmark.interleave);
  EXPECT_EQ(back->benchmark.processes, 3);
}

TEST(JobSpecBenchmark, InterleaveNeedsAJobToRunBeside) {
  auto p = parse_job_spec(benchmark_job("{interleave: true}", ", compare_to: {value_us: 10}"), "b.yaml");
  EXPECT_FALSE(p.ok());
  EXPECT_TRUE(has_issue(p, "benchmark.interleave")) << p.error_text();
  auto none = parse_job_spec(benchmark_job("{interleave: true}", ""), "b.yaml");
  EXPECT_TRUE(has_issue(none, "benchmark.interleave")) << none.error_text();
}

TEST(JobSpecBenchmark, ProcessesOutOfRangeIsRefused) {
  EXPECT_TRUE(has_issue(parse_job_spec(benchmark_job("{processes: 0}", ""), "b.yaml"), "benchmark.processes"));
  EXPECT_TRUE(has_issue(parse_job_spec(benchmark_job("{processes: 17}", ""), "b.yaml"), "benchmark.processes"));
  EXPECT_TRUE(has_issue(parse_job_spec(benchmark_job("{interleave: maybe}", ""), "b.yaml"), "benchmark.interleave"));
}

TEST(JobSpecBenchmark, MinRoundsParsesTravelsAndFitsUnderTheCap) {
  auto p = parse_job_spec(benchmark_job("{interleave: true, min_rounds: 3, max_rounds: 7}", ", compare_to: parent"), "b.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  EXPECT_EQ(p.spec->benchmark.min_rounds, 3);
  auto back = job_spec_from_json(to_json(*p.spec));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->benchmark.min_rounds, 3);
  EXPECT_EQ(back->benchmark.max_rounds, 7);
  const auto above = parse_job_spec(benchmark_job("{min_rounds: 9, max_rounds: 7}", ""), "b.yaml");
  ASSERT_TRUE(has_issue(above, "benchmark.min_rounds")) << above.error_text();
  EXPECT_NE(above.error_text().find("min_rounds 9 is above max_rounds 7"), std::string::npos) << above.error_text();
  EXPECT_TRUE(has_issue(parse_job_spec(benchmark_job("{min_rounds: 2}", ""), "b.yaml"), "benchmark.min_rounds"));
}

TEST(JobSpecBenchmark, UnsetKeysKeepTheContentHash) {
  auto p = parse_job_spec(benchmark_job("{min_samples: 20}", ""), "b.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  JobSpec s = *p.spec;
  const auto h = job_content_hash(s, "sha256:x");
  EXPECT_FALSE(to_json(s)["benchmark"].contains("processes"));
  EXPECT_FALSE(to_json(s)["benchmark"].contains("min_rounds"));
  s.benchmark.processes = 1;
  EXPECT_EQ(job_content_hash(s, "sha256:x"), h);
  s.benchmark.processes = 3;
  EXPECT_NE(job_content_hash(s, "sha256:x"), h);
}

}  // namespace
}  // namespace kfleet
