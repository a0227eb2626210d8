// The suite parser: what JOBS.md's example says, and the mistakes users make.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "kfleet/common/suite.hpp"

namespace kfleet {
namespace {

TEST(Suite, ParsesTheDesignExample) {
  auto p = parse_suite(
      "suite: nightly\njobs: [fa-s512.yaml, fp8-sdpa.yaml]\n"
      "on: {gpus: [L4, H100, gfx1151], regions: any}\ncompare_to: baseline\n"
      "schedule: \"0 3 * * *\"\n",
      "nightly.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  EXPECT_EQ(p.suite->name, "nightly");
  EXPECT_EQ(p.suite->jobs, (std::vector<std::string>{"fa-s512.yaml", "fp8-sdpa.yaml"}));
  EXPECT_EQ(p.suite->gpus, (std::vector<std::string>{"L4", "H100", "gfx1151"}));
  EXPECT_TRUE(p.suite->regions.empty());
  EXPECT_EQ(p.suite->schedule, "0 3 * * *");
  auto back = suite_from_json(to_json(*p.suite));
  EXPECT_EQ(back.jobs, p.suite->jobs);
  EXPECT_EQ(back.gpus, p.suite->gpus);
  EXPECT_EQ(back.schedule, p.suite->schedule);
}

TEST(Suite, RegionsListAndAbsentGpusMeanEveryClass) {
  auto p = parse_suite("suite: s\njobs: [a.yaml]\non: {regions: [us-east-1, eu-west-1]}\n", "s.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  EXPECT_TRUE(p.suite->gpus.empty());
  EXPECT_EQ(p.suite->regions, (std::vector<std::string>{"us-east-1", "eu-west-1"}));
}

TEST(Suite, ReportsEveryProblemWithItsPosition) {
  auto p = parse_suite("jobs: [a.yaml]\nwhen: nightly\ncompare_to: parent\nschedule: \"0 3 *\"\n",
                       "bad.yaml");
  EXPECT_FALSE(p.ok());
  std::string all = p.error_text();
  EXPECT_NE(all.find("suite"), std::string::npos) << all;
  EXPECT_NE(all.find("bad.yaml:2:1: when: unknown key"), std::string::npos) << all;
  EXPECT_NE(all.find("compare_to"), std::string::npos) << all;
  EXPECT_NE(all.find("5-field cron"), std::string::npos) << all;
  EXPECT_EQ(p.issues.size(), 4u) << all;
}

TEST(Suite, SyntaxErrorsNameTheLine) {
  auto p = parse_suite("suite: s\njobs: [a.yaml\n", "broken.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error_text().find("broken.yaml:"), std::string::npos);
}

TEST(Suite, EveryExampleSuiteLoadsWithItsJobs) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(KFLEET_SOURCE_DIR) + "/jobs/suites")) {
    if (e.path().extension() != ".yaml") continue;
    auto req = load_suite_request(e.path().string());
    ASSERT_TRUE(req.ok()) << e.path() << ": " << req.error().message;
    EXPECT_FALSE((*req)["jobs"].empty());
    for (const auto& j : (*req)["jobs"]) EXPECT_FALSE(j["bundle"]["files"].empty()) << j["source_name"];
    ++n;
  }
  EXPECT_GE(n, 1);
}

TEST(Suite, MissingJobFileIsNamed) {
  auto dir = std::filesystem::temp_directory_path() / "kfleet-suite-gtest";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "s.yaml") << "suite: s\njobs: [nope.yaml]\n";
  auto req = load_suite_request((dir / "s.yaml").string());
  ASSERT_FALSE(req.ok());
  EXPECT_NE(req.error().message.find("nope.yaml"), std::string::npos) << req.error().message;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kfleet
