#pragma once
// A problem's kernel against kfleet's PyTorch references (a verdict's `versus`) as the CLI and
// MCP show it: briefly in a table's column, in full with the cache key in a job's detail, and
// fast_p for a regression run or a campaign (kfleet/common/versus.hpp words it).
#include <string>

#include <nlohmann/json.hpp>

namespace kfleet::cli {

// The text up to its first newline: a verdict's reason in a one-line place (a table's cell),
// where its last line (the comparison with PyTorch) has a column of its own.
std::string first_line(const std::string& text);

// "0.93x eager, 1.41x compile" for a table's column; "eager -" for a reference not timed;
// "-" without comparisons.
std::string versus_brief(const nlohmann::json& versus);

// A job's detail: one line per comparison (speedup, interval, the reference's median, cached or
// timed in the run, the note), then the key each reference's timing is cached by, each line
// after the first starting with `indent`.
std::string versus_detail(const nlohmann::json& versus, const std::string& indent);

// The distinct cache keys of a set of verdicts' comparisons ({"versus": [...]} entries of a
// campaign or a regression run), one line each: "<baseline>: <key text>".
std::string versus_keys(const nlohmann::json& entries, const std::string& prefix);

}  // namespace kfleet::cli
