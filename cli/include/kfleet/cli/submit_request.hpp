#pragma once
// Building a submission and describing its answer: pure, so tests check the exact body and
// wording without a server.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kfleet/common/bundle.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::cli {

// The job YAML with its top-level `priority:` set to `priority` (replaced in place, or appended),
// so line numbers in server-side errors still match the user's file.
Result<std::string> with_priority(const std::string& yaml_text, int priority);

// POST /api/v1/jobs body: {spec_yaml, source_name, bundle, force}.
nlohmann::json submit_body(const std::string& yaml_text, const std::string& source_name,
                           const Bundle& bundle, bool force);

// "submitted job 12 fa-s512-v3/iter1 (L4, regions us-central1-a, us-west1-b)" from the Job.
std::string submitted_line(const nlohmann::json& job);
// For a no-repeat-map answer: "identical to job 7 (verdict rejected performance): not run
// again; use --force to run it anyway".
std::string duplicate_line(const nlohmann::json& job, std::int64_t duplicate_of);
// "<server>/#/jobs/<id>"
std::string dashboard_url(const std::string& server, std::int64_t job_id);

}  // namespace kfleet::cli
