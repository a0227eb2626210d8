// A listing's page is written straight as text (append_job_json, append_agent_json) rather than
// built as JSON trees and dumped; what a client reads must not change. Each record here is held
// to the tree's dump, byte for byte: every key, the order json::dump sorts them in, and strings
// that need escaping (quotes, control characters, UTF-8, bytes that are not UTF-8).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../src/views.hpp"

namespace kfleet::api {
namespace {

std::string dumped(const nlohmann::json& j, bool ascii = false) {
  return j.dump(-1, ' ', ascii, nlohmann::json::error_handler_t::replace);
}

// Control characters, a NUL among them (its length from the array, not counted by hand: a
// count of 21 read 5 bytes past the literal's end, which ASan found).
constexpr char kControls[] = "nul \0 and \x01 \x1f \x7f";

// Strings a name, a reason or a user may hold.
const std::vector<std::string> kAwkward = {
    "",
    "plain",
    "quote \" backslash \\ slash /",
    "lines\nand\ttabs\r\b\f",
    std::string(kControls, sizeof kControls - 1),
    "UTF-8: caf\xc3\xa9, \xe2\x9c\x93, \xf0\x9f\x9a\x80",
    "not UTF-8: \xff\xfe end",
};

TEST(ListingText, AJobWrittenAsTextIsItsTreesDump) {
  store::JobRecord j;
  EXPECT_EQ([&] { std::string s; append_job_json(s, j); return s; }(), dumped(job_json(j)));
  for (const auto& text : kAwkward) {
    j.id = 9'007'199'254'740'993;  // past a double's exact integers
    j.name = j.campaign = j.parent = j.state_reason = j.submitted_by = j.cancelled_by = text;
    j.gpu = j.bundle_hash = j.content_hash = j.source_name = text;
    j.regions = {"us-east-1a", text, ""};
    j.priority = -7;
    j.attempts = 2;
    j.max_attempts = 3;
    j.current_run_id = 41;
    j.state = JobState::waiting_capacity;
    j.created_ms = 1'700'000'000'123;
    j.updated_ms = text.empty() ? 0 : 1'700'000'100'456;
    j.simulated = !text.empty();
    j.verdict.reset();
    if (text.size() % 2) {
      Verdict v;
      v.outcome = RunOutcome::rejected;
      v.gate = "performance";
      v.reason = text;
      v.perf = "regressed";
      v.delta_pct = 1.0 / 3;
      v.median_us = 199.7351805;
      v.metrics = {{"note", text}, {"samples", {1, 2.5, -0.0}}};
      j.verdict = v;
    }
    std::string s;
    append_job_json(s, j);
    EXPECT_EQ(s, dumped(job_json(j))) << "with " << dumped(text, true);
  }
}

TEST(ListingText, AnAgentWrittenAsTextIsItsTreesDump) {
  store::AgentRecord a;
  EXPECT_EQ([&] { std::string s; append_agent_json(s, a); return s; }(), dumped(agent_json(a)));
  for (const auto& text : kAwkward) {
    a.id = 10'000;
    a.name = a.region = a.backend = a.provider = a.instance_id = a.host = text;
    a.enrol_token_name = a.enrol_token_by = text;
    a.enrol_token_id = text.size() % 2 ? 3 : 0;
    a.state = store::AgentState::lost;
    a.current_run_id = 12;
    a.slot = 3;
    a.enrolled_ms = 1'700'000'000'000;
    a.last_seen_ms = text.empty() ? 0 : 1'700'000'005'000;
    a.info = {{"host", text}, {"python", {{"torch", "2.11.0+cu130"}}}, {"cores", 16}};
    GpuInfo g;
    g.gpu_class = "H200";
    g.name = text;
    g.memory_bytes = 150'000'000'000;
    g.simulated = text.empty();
    g.extra = {{"clock_mhz", 1980}};
    a.gpus = {g, GpuInfo{}};
    std::string s;
    append_agent_json(s, a);
    EXPECT_EQ(s, dumped(agent_json(a))) << "with " << dumped(text, true);
  }
}

}  // namespace
}  // namespace kfleet::api
