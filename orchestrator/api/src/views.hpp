#pragma once
// JSON forms of store records, as openapi.yaml describes them.
#include <nlohmann/json.hpp>

#include "kfleet/store/store.hpp"

namespace kfleet::api {

nlohmann::json job_json(const store::JobRecord& j, bool with_spec = false);
nlohmann::json run_json(const store::RunRecord& r);
nlohmann::json agent_json(const store::AgentRecord& a);
nlohmann::json block_json(const store::RegionBlock& b, TimeMs now);

}  // namespace kfleet::api
