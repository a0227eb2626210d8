#pragma once
// The schema as an ordered list of steps; schema_version records how many have been applied.
#include "kfleet/common/result.hpp"
#include "sqlite_db.hpp"

namespace kfleet::store::sqlite {

int latest_schema_version();
// The step that added GPU slots (agents.host/slot, runs.host/slot/host_exclusive).
inline constexpr int kSlotsSchemaVersion = 4;
// The step that made who set a baseline and who cancelled a job fields of their own
// (baselines.set_by, jobs.cancelled_by).
inline constexpr int kAuditFieldsSchemaVersion = 5;
// The step that records where a job came from (job_origins: token, parent + change).
inline constexpr int kJobOriginsSchemaVersion = 7;
// The step that put a job's token on its row, with the index of live jobs by token.
inline constexpr int kLiveTokenSchemaVersion = 9;
// The step that put a job's kernel.language on its row (jobs.language).
inline constexpr int kJobLanguageSchemaVersion = 10;
// Applies every step above the database's version, one transaction each. Refuses a database
// written by a newer kfleetd rather than guessing at its schema.
Result<void> migrate(Db& db);
// Applies the steps up to `version` only: tests build a database as an older kfleetd left it.
Result<void> migrate_to(Db& db, int version);

}  // namespace kfleet::store::sqlite
