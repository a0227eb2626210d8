#pragma once
// A SQLite database as an older kfleetd left it, for the migration tests.
#include <string>

#include <gtest/gtest.h>

#include "../src/migrations.hpp"
#include "../src/sqlite_db.hpp"
#include "temp_dir.hpp"

namespace kfleet::store::testing {

// A new database file migrated up to schema `version` only, holding what `sql` wrote: its path.
inline std::string sqlite_at_schema(int version, const std::string& sql) {
  const std::string path = make_temp_dir() + "/old.db";
  auto db = sqlite::Db::open(path, false);
  EXPECT_TRUE(db.ok()) << db.error().message;
  if (!db.ok()) return path;
  EXPECT_TRUE(sqlite::migrate_to(**db, version).ok());
  (*db)->exec(sql.c_str());
  return path;
}

}  // namespace kfleet::store::testing
