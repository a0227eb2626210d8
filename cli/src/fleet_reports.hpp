#pragma once
// Pure renderers for fleet-level results: the regression matrix (text and Markdown), a
// campaign's log of kept wins and rejections, and a run's gated report shaped like seed 000.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kfleet::cli {

// The matrix kernel x GPU class; each cell "verdict delta [CI]".
std::string render_regression_text(const nlohmann::json& regression);
std::string render_regression_markdown(const nlohmann::json& regression);
bool regression_has_regressed(const nlohmann::json& regression);

// "High-Signal Kept Wins", "Important Rejections" with reasons, current best.
std::string render_campaign(const nlohmann::json& campaign);

// A Markdown report of one run from GET /api/v1/runs/{id} and its events.
std::string render_run_report(const nlohmann::json& run_reply, const std::vector<nlohmann::json>& events);

}  // namespace kfleet::cli
