#include <gtest/gtest.h>

#include "kfleet/cli/views.hpp"
#include "kfleet/testing/expect.hpp"

namespace kfleet::cli {
namespace {

constexpr TimeMs kNow = 1'763'704'000'000;  // 2025-11-21T05:46:40Z

TEST(Views, Iso8601RoundTripsWithCommonClock) {
  EXPECT_EQ(parse_iso8601_ms(format_iso8601(kNow + 123)), kNow + 123);
  EXPECT_EQ(parse_iso8601_ms("1970-01-01T00:00:01Z"), 1000);
  EXPECT_EQ(parse_iso8601_ms("yesterday"), -1);
}

TEST(Views, Ages) {
  EXPECT_EQ(format_age(59'000), "59s");
  EXPECT_EQ(format_age(125'000), "2m");
  EXPECT_EQ(format_age(3 * 3'600'000), "3h");
  EXPECT_EQ(format_age(50 * 3'600'000), "2d");
  EXPECT_EQ(format_age(-5), "-");
}

TEST(Views, TableAlignsUtf8AndColour) {
  TextTable t({"A", "B"});
  t.add_row({"696.0 µs", "x"});
  t.add_row({"\x1b[31mred\x1b[0m", "y"});
  EXPECT_EQ(t.render(), "A         B\n696.0 µs  x\n\x1b[31mred\x1b[0m       y\n");
  EXPECT_EQ(display_width("µs"), 2u);
}

TEST(Views, JobsTableShowsVerdictOrReason) {
  nlohmann::json body = {{"jobs",
      {{{"id", 12}, {"name", "fa/iter1"}, {"gpu", "L4"}, {"state", "rejected"}, {"attempts", 1},
        {"max_attempts", 3}, {"created", format_iso8601(kNow - 90'000)},
        {"verdict", {{"outcome", "rejected"}, {"gate", "performance"}, {"reason", "+6.1%"}}}},
       {{"id", 13}, {"name", "fa/iter2"}, {"gpu", "L4"}, {"state", "waiting_capacity"},
        {"state_reason", "us-east-1 stockout"}, {"attempts", 0}, {"simulated", true}}}}};
  const std::string out = render_jobs(body, kNow, false);
  kfleet::testing::expect_contains(out, {"ID  NAME", "performance: +6.1%", "1/3", "1m",
                                         "us-east-1 stockout", "fa/iter2 [sim]"});
  EXPECT_EQ(render_jobs({{"jobs", nlohmann::json::array()}}, kNow, false), "no jobs\n");
}

TEST(Views, AgentsAndBlocks) {
  nlohmann::json body = {
      {"agents", {{{"id", 3}, {"name", "l4-a"}, {"region", "us-west-2"}, {"backend", "simulated"},
                   {"state", "busy"}, {"current_run_id", 9}, {"simulated", true},
                   {"last_seen", format_iso8601(kNow - 4000)},
                   {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}}}},
      {"blocks", {{{"provider", "aws"}, {"region", "us-east-1"}, {"kind", "stockout"},
                   {"reason", "InsufficientInstanceCapacity"}, {"seconds_left", 125}}}}};
  const std::string out = render_agents(body, kNow, false);
  kfleet::testing::expect_contains(out, {"L4/sm_89", "4s ago", "region blocks:",
                                         "InsufficientInstanceCapacity  2m",
                                         "1 GPU(s) on 1 host(s): 1 busy, 0 idle"});
}

TEST(Views, AgentsSayWhoEnrolledThem) {
  nlohmann::json agents = {
      {{"id", 1}, {"name", "old"}, {"state", "idle"}, {"enrolled_by", {{"kind", "fleet_token"}}}},
      {{"id", 2}, {"name", "new"}, {"state", "idle"},
       {"enrolled_by", {{"kind", "enrol_token"}, {"enrol_token_id", 7}, {"name", "rack-3"},
                        {"minted_by", "alice"}}}},
      {{"id", 3}, {"name", "older-kfleetd"}, {"state", "idle"}}};
  const std::string out = render_agents({{"agents", agents}}, kNow, false);
  kfleet::testing::expect_contains(out, {"ENROLLED BY", "fleet token", "#7 rack-3 (alice)"});
}

TEST(Views, AgentsShowWhatTheirPythonRecords) {
  nlohmann::json agents = {
      {{"id", 1}, {"name", "py"}, {"state", "idle"},
       {"gpus", {{{"gpu_class", "H200"}, {"arch", "sm_90a"},
                  {"extra", {{"python", {{"torch", "2.11.0+cu130"}, {"triton", "3.6.0"},
                                         {"languages", {"torch", "triton"}}}}}}}}}},
      {{"id", 2}, {"name", "nopy"}, {"state", "idle"},
       {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}}};
  const std::string out = render_agents({{"agents", agents}}, kNow, false);
  EXPECT_NE(out.find("PYTHON"), std::string::npos) << out;
  EXPECT_NE(out.find("torch 2.11.0+cu130, triton 3.6.0"), std::string::npos) << out;
}

TEST(Views, AgentsCountGpusPerHost) {
  nlohmann::json agents = nlohmann::json::array();
  for (int i = 0; i < 8; ++i)
    agents.push_back({{"id", i + 1}, {"name", "h-gpu" + std::to_string(i)}, {"host", "i-0abc"},
                      {"slot", i}, {"state", i < 3 ? "busy" : "idle"},
                      {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}});
  agents.push_back({{"id", 9}, {"name", "solo"}, {"host", "agent:9"}, {"slot", 0}, {"state", "idle"}});
  const std::string out = render_agents({{"agents", agents}}, kNow, false);
  EXPECT_NE(out.find("i-0abc:7"), std::string::npos) << out;
  EXPECT_NE(out.find("9 GPU(s) on 2 host(s): 3 busy, 6 idle"), std::string::npos) << out;
}

TEST(Views, ResultsShowDeltaWithCi) {
  nlohmann::json body = {{"results", {{
      {"run", {{"id", 9}, {"outcome", "rejected"}, {"simulated", false},
               {"verdict", {{"outcome", "rejected"}, {"gate", "performance"}, {"median_us", 696.0},
                            {"delta_pct", 6.1}, {"ci_low_pct", 5.2}, {"ci_high_pct", 7.0}}}}},
      {"job", {{"id", 12}, {"name", "fp8-sdpa/step2"}, {"gpu", "L4"}}}}}}};
  const std::string out = render_results(body, kNow, false);
  kfleet::testing::expect_contains(out, {"12 fp8-sdpa/step2", "696.0 µs", "+6.1% [+5.2%, +7.0%]"});
}

TEST(Views, JobDetailListsRuns) {
  nlohmann::json body = {
      {"job", {{"id", 12}, {"name", "fa/iter1"}, {"gpu", "L4"}, {"state", "passed"},
               {"attempts", 2}, {"max_attempts", 3}, {"regions", {"us-west-2"}},
               {"verdict", {{"outcome", "passed"}, {"reason", "same"}}}}},
      {"runs", {{{"id", 8}, {"agent_id", 1}, {"attempt", 1}, {"outcome", "lost"}},
                {{"id", 9}, {"agent_id", 3}, {"attempt", 2}, {"outcome", "passed"}}}}};
  const std::string out = render_job_detail(body, kNow, false);
  kfleet::testing::expect_contains(out, {"job       12 fa/iter1", "L4 (us-west-2)", "PASSED: same",
                                         "lost"});
  EXPECT_EQ(out.find("cancelled"), std::string::npos) << out;  // nobody cancelled it
}

TEST(Views, JobDetailSaysWhoSubmittedAndWhoCancelled) {
  nlohmann::json body = {
      {"job", {{"id", 13}, {"name", "fa/iter2"}, {"gpu", "L4"}, {"state", "cancelled"},
               {"state_reason", "cancelled by sam"}, {"attempts", 0}, {"max_attempts", 3},
               {"submitted_by", "alice"}, {"cancelled_by", "sam"}}},
      {"runs", nlohmann::json::array()}};
  const std::string out = render_job_detail(body, kNow, false);
  EXPECT_NE(out.find("submitter alice\n"), std::string::npos) << out;
  EXPECT_NE(out.find("cancelled by sam\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace kfleet::cli
