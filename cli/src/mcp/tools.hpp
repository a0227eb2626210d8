#pragma once
// kfleet's MCP tools: seed 001's loop as calls a search agent makes, one change at a time.
// Each uses kfleetd's API as any client does, with the CLI's server, token and TLS settings.
#include <vector>

#include "server.hpp"
#include "session.hpp"

namespace kfleet::cli::mcp {

std::vector<Tool> kfleet_tools(Session& s);

// The problem library's tools (no server needed): kfleet_list_problems and kfleet_get_problem,
// on the library `kfleet problems` reads (env's $KFLEET_PROBLEMS_DIR, else the source tree), with
// the same code (problems_view.hpp). kfleet_tools includes them.
std::vector<Tool> problem_tools(EnvLookup env);

// The campaign view (GET /api/v1/campaigns/NAME) as seed 002's log: snapshot, kept wins,
// rejections with reasons, the no-repeat map, pending.
std::string campaign_log_markdown(const nlohmann::json& campaign);

// Gate data of a job from its runs' events: {resources, correctness, benchmark} plus marks.
nlohmann::json gates_from_events(const nlohmann::json& job, const std::vector<nlohmann::json>& events);

}  // namespace kfleet::cli::mcp
