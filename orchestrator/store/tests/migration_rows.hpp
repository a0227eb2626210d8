#pragma once
// The rows both backends' migration tests store as an older kfleetd would have, and what the
// migrations must make of them: one story, told to SQLite (store_sqlite_gtest.cpp) and to
// PostgreSQL (store_postgres_gtest.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kfleet/store/store.hpp"

namespace kfleet::store::testing {

// Before set_by and cancelled_by were fields: the user was only in the reason text the API wrote
// ("set by X", "<reason> (set by X)", "cancelled by X"); a baseline kfleetd set itself (a
// campaign's kept win, a regression run's first result) names no one.
inline constexpr const char* kRowsBeforeAuditFields =
    "INSERT INTO jobs (id, name, state, state_reason, max_attempts, created_ms, updated_ms, "
    "submitted_by) VALUES (1, 'v1', 'passed', '', 3, 1, 1, 'carol'),"
    "(2, 'c1', 'cancelled', 'cancelled by sam', 3, 1, 1, 'alice'),"
    "(3, 'c2', 'cancelled', 'cancelled by user', 3, 1, 1, 'alice'),"
    "(4, 'q1', 'error', 'cancelled by nobody', 3, 1, 1, 'alice');"
    "INSERT INTO baselines (kernel, case_name, gpu_class, simulated, run_id, job_id, "
    "median_us, reason, set_ms) VALUES "
    "('k', 'c', 'L4', 0, 1, 1, 10, 'set by sam', 1),"
    "('k', 'c', 'L4', 0, 1, 1, 10, 'stage-2 accepted (set by alice@lab.example)', 2),"
    "('k', 'c', 'L4', 0, 1, 1, 10, 'odd (set by x) (set by bob)', 3),"
    "('k', 'c', 'L4', 0, 1, 1, 10, 'kept win of campaign k (job 1)', 4),"
    "('k', 'c', 'L4', 0, 1, 1, 10, 'first result in regression run 3', 5),"
    "('k', 'c', 'L4', 0, 1, 1, 10, 'by hand', 6),"
    "('k', 'c', 'L4', 0, 1, 1, 10, 'set by ', 7);";
// Once migrated: the baselines' set_by, newest first (baseline_history("k")): the user of the
// text, the job's submitter for kfleetd's own, else "".
inline const std::vector<std::string> kSetByAfterMigration = {
    "", "", "carol", "carol", "", "alice@lab.example", "sam"};
// The jobs' cancelled_by (ids 1 to 4): only a cancelled job's, and "user" names no one.
inline const std::vector<std::string> kCancelledByAfterMigration = {"", "sam", "", ""};

// Before a job's language was a column: it was in the stored spec, or nowhere.
inline constexpr const char* kJobsBeforeLanguageColumn =
    "INSERT INTO jobs (id, name, state, max_attempts, created_ms, updated_ms, spec) VALUES "
    "(1, 't', 'queued', 3, 1, 1, '{\"kernel\":{\"family\":\"a\",\"language\":\"triton\"}}'),"
    "(2, 'p', 'passed', 3, 1, 1, '{\"kernel\":{\"language\":\"torch\"}}'),"
    "(3, 'h', 'queued', 3, 1, 1, '{\"kernel\":{\"language\":\"hip\"}}'),"
    "(4, 'c', 'queued', 3, 1, 1, '{\"kernel\":{\"language\":\"cuda\"}}'),"
    "(5, 'none', 'queued', 3, 1, 1, '{\"kernel\":\"gemm\"}'),"
    "(6, 'null', 'queued', 3, 1, 1, 'null'),"
    "(7, 'number', 'queued', 3, 1, 1, '{\"kernel\":{\"language\":3}}');";
// Once migrated (ids 1 to 7): the spec's language, or cuda when it names none.
inline const std::vector<std::string> kLanguagesAfterMigration = {"triton", "torch", "hip", "cuda",
                                                                  "cuda",   "cuda",  "cuda"};

// The checks of both backends' tests, on a store opened (and so migrated) over those rows.
inline void expect_audit_fields_migrated(Store& s) {
  std::vector<std::string> by, cancelled_by;
  for (const auto& b : s.baseline_history("k")) by.push_back(b.set_by);
  for (std::int64_t id = 1; id <= 4; ++id) cancelled_by.push_back(s.get_job(id)->cancelled_by);
  EXPECT_EQ(by, kSetByAfterMigration);
  EXPECT_EQ(cancelled_by, kCancelledByAfterMigration);
}
inline void expect_languages_migrated(Store& s) {
  std::vector<std::string> langs;
  for (std::int64_t id = 1; id <= 7; ++id) langs.push_back(s.get_job(id)->language);
  EXPECT_EQ(langs, kLanguagesAfterMigration);
  EXPECT_EQ(s.pending_jobs().at(0).language, "triton");
}

}  // namespace kfleet::store::testing
