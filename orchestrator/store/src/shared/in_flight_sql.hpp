// How many of a token's jobs are in flight (the per-token limit of a submission), in the words
// both backends run and their index jobs_live_token repeats as its condition (SQLite's
// migration 9, PostgreSQL's 12): the planner uses a partial index only where the statement
// implies its condition, so it reads the token's live jobs, never its history. Tests check the
// plan against this same text.
#pragma once

namespace kfleet::store {

inline constexpr const char* kInFlightSql =
    "SELECT COUNT(*) FROM jobs "
    "WHERE token_key = ? AND state NOT IN ('passed', 'rejected', 'error', 'cancelled')";

}  // namespace kfleet::store
