// One verdict across languages (issue #51): the Triton steps of fa-s512-v3 judged, on a simulated
// L4, against a CUDA parent and then against each other, as any two CUDA kernels would be. The
// simulated times are the jobs' own placeholders (CUDA baseline 41 µs, Triton seed 41 µs, Triton
// bn64 39 µs), not measurements: the Triton seed is compared with its CUDA parent's median; the
// one-change Triton step beats the Triton seed and becomes the campaign's best.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

namespace fs = std::filesystem;

// The job file without its `regions:` line (the jobs name cloud zones; the agent is "local").
void copy_without_regions(const std::string& from, const std::string& to) {
  std::ifstream in(from);
  std::ofstream out(to);
  std::string line;
  while (std::getline(in, line))
    if (line.find("regions:") == std::string::npos) out << line << "\n";
}

TEST(PythonCampaign, ATritonChildIsJudgedAgainstItsCudaParent) {
  Cluster c;
  c.start_kfleetd();
  c.start_agent("l4", "local", "L4", "sm_89");
  const std::string d = c.dir() + "/jobs";  // copies: nothing is written into the source tree
  fs::create_directories(d);
  copy_without_regions(std::string(KFLEET_SOURCE_DIR) + "/jobs/fa-s512/baseline.yaml", d + "/baseline.yaml");
  for (const char* f : {"step1-triton-seed.yaml", "step2-triton-bn64.yaml"})
    copy_without_regions(std::string(KFLEET_SOURCE_DIR) + "/jobs/fa-s512-triton/" + f, d + "/" + f);
  const std::string lib = std::string(KFLEET_SOURCE_DIR) + "/kernels";

  auto parent = c.cli({"submit", d + "/baseline.yaml", "--wait", "--kernel-lib", lib});
  ASSERT_EQ(parent.exit_code, 0) << parent.output << c.logs();
  auto seed = c.cli({"submit", d + "/step1-triton-seed.yaml", "--wait", "--kernel-lib", lib});
  EXPECT_EQ(seed.exit_code, 0) << seed.output << c.logs();
  auto step = c.cli({"submit", d + "/step2-triton-bn64.yaml", "--wait", "--kernel-lib", lib});
  EXPECT_EQ(step.exit_code, 0) << step.output << c.logs();

  auto api = c.get("/api/v1/campaigns/fa-s512-v3")["campaign"];
  // The Triton seed was compared with its CUDA parent's median, as a CUDA child would be.
  nlohmann::json seed_entry;
  for (const auto& [key, list] : api.items())
    if (list.is_array())
      for (const auto& e : list)
        if (e.value("name", "") == "fa-s512-v3/triton-seed") seed_entry = e;
  ASSERT_FALSE(seed_entry.is_null()) << api.dump(2);
  EXPECT_EQ(seed_entry.value("parent", ""), "fa-s512-v3/baseline") << seed_entry.dump(2);
  EXPECT_TRUE(seed_entry.contains("delta_pct") && seed_entry["delta_pct"].is_number()) << seed_entry.dump(2);
  EXPECT_NE(seed_entry.value("reason", "").find(" µs vs 4"), std::string::npos) << seed_entry.dump(2);
  // The one-change Triton step beats the Triton seed and is the campaign's best.
  const auto& best = api["current_best"];
  EXPECT_EQ(best.value("name", ""), "fa-s512-v3/triton-bn64") << api.dump(2);
  EXPECT_EQ(best.value("parent", ""), "fa-s512-v3/triton-seed");
  EXPECT_EQ(best.value("perf", ""), "improved");
  EXPECT_NEAR(best.value("delta_pct", 0.0), -4.9, 1.5) << best.dump(2);
  const auto id = c.sql("SELECT id FROM jobs WHERE name = 'fa-s512-v3/triton-seed'");
  ASSERT_EQ(id.size(), 1u);
  EXPECT_EQ(c.job(std::stoll(id[0][0]))["job"]["spec"]["kernel"]["language"], "triton");
  auto show = c.cli({"campaign", "show", "fa-s512-v3"});
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("Current best: fa-s512-v3/triton-bn64"), std::string::npos) << show.output;
}

}  // namespace
}  // namespace kfleet::e2e
