#include <gtest/gtest.h>

#include <filesystem>

#include "kfleet/common/bundle.hpp"
#include "kfleet/common/jobspec.hpp"
#include "test_paths.hpp"

namespace kfleet {
namespace {
namespace fs = std::filesystem;

std::vector<fs::path> example_jobs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(testing::source_dir() / "jobs")) {
    // Not jobs/bad, jobs/suites, nor the exploits that are refused at submit (job_schema_gtest.cpp
    // holds those to failing).
    if (e.path().extension() == ".yaml" && e.path().parent_path().filename() != "bad" &&
        e.path().parent_path().filename() != "suites" && !testing::is_refused_exploit(e.path())) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(JobSpecJson, EveryExampleRoundTripsLosslessly) {
  const auto jobs = example_jobs();
  ASSERT_GE(jobs.size(), 6u);
  for (const auto& path : jobs) {
    auto p = parse_job_spec_file(path.string());
    ASSERT_TRUE(p.ok()) << p.error_text();
    const auto j = to_json(*p.spec);
    auto back = job_spec_from_json(j);
    ASSERT_TRUE(back.ok()) << path << ": " << back.error().message << "\n" << j.dump(2);
    EXPECT_EQ(to_json(*back), j) << path;
    EXPECT_EQ(job_content_hash(*back, "sha256:x"), job_content_hash(*p.spec, "sha256:x")) << path;
    // Fields the JSON form must carry through exactly.
    EXPECT_EQ(back->name, p.spec->name);
    EXPECT_EQ(back->kernel.sources, p.spec->kernel.sources);
    EXPECT_EQ(back->simulate.has_value(), p.spec->simulate.has_value());
    if (back->gates.performance) {
      EXPECT_EQ(back->gates.performance->compare_to.kind, p.spec->gates.performance->compare_to.kind);
      EXPECT_DOUBLE_EQ(back->gates.performance->compare_to.value_us,
                       p.spec->gates.performance->compare_to.value_us);
    }
  }
}

TEST(JobSpecJson, EveryExampleBundlesFromItsOwnFolder) {
  for (const auto& path : example_jobs()) {
    auto p = parse_job_spec_file(path.string());
    ASSERT_TRUE(p.ok()) << p.error_text();
    auto b = pack_job_bundle(path.parent_path().string(), p.spec->kernel.sources);
    ASSERT_TRUE(b.ok()) << path << ": " << b.error().message;
    EXPECT_EQ(b->files.size(), p.spec->kernel.sources.size()) << path;
    EXPECT_GT(b->total_bytes(), 0u);
  }
}

TEST(JobSpecJson, FromJsonIsAsStrictAsTheYamlParser) {
  auto p = parse_job_spec_file((testing::source_dir() / "jobs/fa-s512/iter1.yaml").string());
  ASSERT_TRUE(p.ok()) << p.error_text();
  auto j = to_json(*p.spec);
  j["kernel"]["famly"] = "attention";
  auto r = job_spec_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("did you mean 'family'"), std::string::npos) << r.error().message;
  auto strings_stay_strings = to_json(*p.spec);
  strings_stay_strings["kernel"]["defines"]["MODE"] = "true";
  strings_stay_strings["kernel"]["params"] = {{"label", "123"}, {"n", 123}};
  auto s = job_spec_from_json(strings_stay_strings);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->kernel.params["label"], "123");
  EXPECT_EQ(s->kernel.params["n"], 123);
  EXPECT_FALSE(job_spec_from_json(nlohmann::json::array()).ok());
}

TEST(JobSpecJson, ContentHashCoversResultInputsOnly) {
  auto p = parse_job_spec_file((testing::source_dir() / "jobs/fa-s512/iter1.yaml").string());
  ASSERT_TRUE(p.ok()) << p.error_text();
  const JobSpec base = *p.spec;
  const auto h = job_content_hash(base, "sha256:aa");
  EXPECT_EQ(h.rfind("sha256:", 0), 0u);

  JobSpec cosmetic = base;  // bookkeeping that cannot change a measurement
  cosmetic.name = "other";
  cosmetic.campaign = "c2";
  cosmetic.parent = "";
  cosmetic.priority = 99;
  cosmetic.target.regions = {"eu"};
  EXPECT_EQ(job_content_hash(cosmetic, "sha256:aa"), h);

  EXPECT_NE(job_content_hash(base, "sha256:bb"), h);
  JobSpec define = base;
  define.kernel.defines[0].second = "0";
  EXPECT_NE(job_content_hash(define, "sha256:aa"), h);
  JobSpec gpu = base;
  gpu.target.gpu = "H100";
  EXPECT_NE(job_content_hash(gpu, "sha256:aa"), h);
  JobSpec gate = base;
  gate.gates.correctness->tolerance.atol = 2e-3;
  EXPECT_NE(job_content_hash(gate, "sha256:aa"), h);
  JobSpec bench = base;
  bench.benchmark.min_samples = 11;
  EXPECT_NE(job_content_hash(bench, "sha256:aa"), h);
  JobSpec sim = base;
  sim.simulate->time_us += 1;
  EXPECT_NE(job_content_hash(sim, "sha256:aa"), h);
}

}  // namespace
}  // namespace kfleet
