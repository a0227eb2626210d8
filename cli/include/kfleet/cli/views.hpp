#pragma once
// Tables for `status`, `agents` and `results`, rendered from the API's JSON. Pure: `now` comes
// in so that ages are testable.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/clock.hpp"

namespace kfleet::cli {

// A plain-text table whose columns fit their widest cell (counted in code points, ignoring
// ANSI colour codes, so "µs" and coloured states line up).
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row);
  std::string render() const;
  std::size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Display width of a UTF-8 string without its ANSI escapes.
std::size_t display_width(const std::string& s);

// "2026-11-21T05:44:33.123Z" (or without millis) -> ms since epoch; -1 when unparseable.
TimeMs parse_iso8601_ms(const std::string& s);
// "12s", "5m", "3h", "2d"; "-" for a negative or unknown span.
std::string format_age(TimeMs span_ms);

// Colours a state or outcome word (green passed, red rejected/error, ...) when asked.
std::string paint_state(const std::string& state, bool color);

// {jobs: [Job]} -> table: id, name, gpu, state, reason/verdict, attempts, age.
std::string render_jobs(const nlohmann::json& body, TimeMs now, bool color);
// {job: Job, runs: [Run]} -> the job's fields, its verdict and a table of its runs.
std::string render_job_detail(const nlohmann::json& body, TimeMs now, bool color);
// One kernel of a verdict's metrics.kernels (the Python recorder's report), with its origin:
// "NAME (job: HOW)" or "NAME (library: FILE PACKAGE)". A job's page lists the first
// kKernelsShown of them.
std::string kernel_origin_text(const nlohmann::json& kernel);
inline constexpr std::size_t kKernelsShown = 12;
// {agents: [Agent], blocks: [RegionBlock]} -> agents table and region blocks table.
std::string render_agents(const nlohmann::json& body, TimeMs now, bool color);
// {results: [{run, job}]} -> job, gpu, outcome, gate, median, delta and CI, simulated.
std::string render_results(const nlohmann::json& body, TimeMs now, bool color);

}  // namespace kfleet::cli
