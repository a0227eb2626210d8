#pragma once
// JSON forms of store records, as openapi.yaml describes them.
#include <nlohmann/json.hpp>

#include <string>

#include "kfleet/store/store.hpp"

namespace kfleet::api {

nlohmann::json job_json(const store::JobRecord& j, bool with_spec = false);
nlohmann::json run_json(const store::RunRecord& r);
nlohmann::json agent_json(const store::AgentRecord& a);
nlohmann::json block_json(const store::RegionBlock& b, TimeMs now);

// What job_json(j).dump() (without the spec) and agent_json(a).dump() give, written straight onto
// `out`: a page of 100 built as trees and then dumped was most of a listing's time beside 10,000
// live agents. Keys in the trees' order (sorted); views_gtest holds both to the trees' text.
void append_job_json(std::string& out, const store::JobRecord& j);
void append_agent_json(std::string& out, const store::AgentRecord& a);

}  // namespace kfleet::api
