// Jobs on a problem of the library, end to end on the simulated backend: the CLI submits a
// rmsnorm@2 job, kfleetd checks it against its library, the agent runs it (marked simulated)
// and the verdict names the problem, the cases it ran and the reference check; kfleetd refuses
// a problem its library does not have, and a job that leaves out a required case.
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "../../common/tests/test_paths.hpp"
#include "cluster.hpp"
#include "kfleet/common/http_client.hpp"

namespace kfleet::e2e {
namespace {
namespace fs = std::filesystem;

std::string rmsnorm_job(const std::string& name, const std::string& problem = "rmsnorm@2") {
  return "name: " + name + "\ntarget: {gpu: L4}\nkernel:\n  problem: " + problem +
         "\n  language: cuda\n  sources: [k.cu]\n"
         "gates:\n  correctness:\n    cases:\n      - {name: small, seeds: [0, 1]}\n"
         "      - {name: llama3_8b, seeds: [0]}\n      - {name: stress, seeds: [0]}\n"
         "  performance: {case: llama3_8b}\n"
         "simulate: {time_us: 50, stage_ms: 20}\n";
}

TEST(ProblemJobs, ARmsnormJobRunsOnTheSimulatedBackendAndItsVerdictNamesTheProblem) {
  Cluster c;
  c.start_kfleetd();
  c.start_agent("a1");
  const std::string yaml = c.write_job("rms", rmsnorm_job("problems/rms"));
  auto r = c.cli({"submit", yaml, "--wait"});
  EXPECT_EQ(r.exit_code, 0) << r.output << c.logs();
  const std::string job = c.the_passed_simulated_job();
  ASSERT_FALSE(job.empty());
  const auto events = c.job_events(std::stoll(job));
  bool verdict_names_it = false, rows_name_it = false;
  nlohmann::json verdict;
  for (const auto& e : events) {
    const std::string d = e.dump();
    if (e.value("type", "") == "verdict") {
      verdict = e["data"];
      verdict_names_it = d.find("\"problem\":\"rmsnorm\"") != std::string::npos &&
                         d.find("\"problem_version\":2") != std::string::npos;
    }
    if (e.value("type", "") == "correctness" && d.find("rmsnorm@2") != std::string::npos) rows_name_it = true;
  }
  EXPECT_TRUE(verdict_names_it) << c.logs();
  EXPECT_TRUE(rows_name_it);
  // The verdict lists the cases it ran, the required one marked, and the reference check
  // (simulated here, and it says so).
  const auto& cases = verdict["metrics"]["cases"];
  ASSERT_EQ(cases.size(), 3u) << verdict.dump();
  EXPECT_EQ(cases[2]["name"], "stress");
  EXPECT_EQ(cases[2]["seeds"], nlohmann::json::array({0}));
  EXPECT_EQ(cases[0]["seeds"], nlohmann::json::array({0, 1}));
  const auto& ref = verdict["metrics"]["reference_check"];
  EXPECT_TRUE(ref.value("simulated", false)) << verdict.dump();
  EXPECT_EQ(ref.value("case", ""), "small") << verdict.dump();
}

// A job that leaves out a required case: the CLI refuses it, and so does kfleetd when the job
// comes to its API directly; each names the case.
TEST(ProblemJobs, AJobWithoutARequiredCaseIsRefusedNamingIt) {
  Cluster c;
  c.start_kfleetd();
  std::string yaml = rmsnorm_job("problems/no-stress");
  const std::string stress = "      - {name: stress, seeds: [0]}\n";
  yaml.erase(yaml.find(stress), stress.size());
  const std::string path = c.write_job("no-stress", yaml);
  auto r = c.cli({"submit", path});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("leaves out the required case 'stress' of rmsnorm@2"), std::string::npos) << r.output;
  HttpClient user(c.url(), Cluster::kUserToken);
  nlohmann::json bundle = {{"files", {{{"path", "k.cu"}, {"data_b64", "Ly8K"}}}}};
  auto api = user.post_json("/api/v1/jobs", {{"spec_yaml", yaml}, {"source_name", "job.yaml"}, {"bundle", bundle}});
  ASSERT_TRUE(api.ok());
  EXPECT_EQ(api->status, 400) << api->body;
  EXPECT_NE(api->body.find("leaves out the required case 'stress' of rmsnorm@2"), std::string::npos) << api->body;
  EXPECT_TRUE(c.sql("SELECT id FROM jobs").empty());
}

TEST(ProblemJobs, KfleetdRefusesAProblemItsLibraryDoesNotHave) {
  // kfleetd's library holds rmsnorm alone; the CLI's (the source tree's) has softmax too, so the
  // job passes the CLI's check and kfleetd's is the one that refuses it.
  const fs::path lib = fs::temp_directory_path() / ("kfleet-e2e-problems-" + std::to_string(::getpid()));
  fs::remove_all(lib);
  fs::create_directories(lib);
  fs::copy(kfleet::testing::source_dir() / "kernels/problems/rmsnorm", lib / "rmsnorm",
           fs::copy_options::recursive);
  ClusterOptions o;
  o.extra_args = {"--problems-dir", lib.string()};
  Cluster c(o);
  c.start_kfleetd();
  std::string yaml = rmsnorm_job("problems/softmax", "softmax@2");
  for (const char* from : {"small, seeds: [0, 1]", "llama3_8b, seeds: [0]", "case: llama3_8b"}) {
    const std::string f(from);
    const std::string to = f == "case: llama3_8b" ? "case: llama2_vocab"
                           : f.rfind("small", 0) == 0 ? f : "llama2_vocab, seeds: [0]";
    yaml.replace(yaml.find(f), f.size(), to);
  }
  const std::string path = c.write_job("softmax", yaml);
  auto r = c.cli({"submit", path});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no problem 'softmax' in the problem library (" + lib.string() + "); it has rmsnorm@2"),
            std::string::npos) << r.output;
  EXPECT_TRUE(c.sql("SELECT id FROM jobs").empty());
  fs::remove_all(lib);
}

// jobs/suites/problems.yaml: the two families and three generic problems in one regression run.
TEST(ProblemJobs, ASuiteSpanningFamiliesAndProblemsRuns) {
  Cluster c;
  c.start_kfleetd();
  // In a region fa-s512's baseline lists (the suite keeps each job's regions).
  c.start_agent("h100", "us-central1-a", "H100", "sm_90a");
  const std::string suite = (kfleet::testing::source_dir() / "jobs/suites/problems.yaml").string();
  auto r = c.cli({"regress", suite, "--json", c.dir() + "/r.json"}, 180000);
  ASSERT_EQ(r.exit_code, 0) << r.output << c.logs();
  EXPECT_NE(r.output.find("missing baseline"), std::string::npos) << r.output;
  auto regs = c.get("/api/v1/regressions")["regressions"];
  ASSERT_EQ(regs.size(), 1u);
  auto reg = c.get("/api/v1/regressions/" + std::to_string(regs[0]["id"].get<int>()))["regression"];
  std::set<std::string> kernels;
  for (const auto& cell : reg["cells"]) kernels.insert(cell["kernel"].get<std::string>());
  EXPECT_EQ(kernels, (std::set<std::string>{"fa-s512-v3", "scaled-mm-cuda", "problems-rmsnorm",
                                            "problems-softmax", "problems-topk"}))
      << reg.dump(2);
}

}  // namespace
}  // namespace kfleet::e2e
