#pragma once
// The JSON schemas (2020-12) of kfleet's MCP tools: what an agent sends and gets back.
#include <nlohmann/json.hpp>

namespace kfleet::cli::mcp::schema {

nlohmann::json submit_input();
nlohmann::json submit_output();
nlohmann::json job_input(bool with_timeout);
nlohmann::json verdict_output();
nlohmann::json campaign_input();
nlohmann::json campaign_output();
nlohmann::json fleet_input();
nlohmann::json fleet_output();
nlohmann::json problems_input();
nlohmann::json problems_output();
nlohmann::json problem_input();
nlohmann::json problem_output();

}  // namespace kfleet::cli::mcp::schema
