#pragma once
// The schema as an ordered list of steps; schema_version records how many have been applied.
#include "kfleet/common/result.hpp"
#include "sqlite_db.hpp"

namespace kfleet::store::sqlite {

int latest_schema_version();
// Applies every step above the database's version, one transaction each. Refuses a database
// written by a newer kfleetd rather than guessing at its schema.
Result<void> migrate(Db& db);

}  // namespace kfleet::store::sqlite
