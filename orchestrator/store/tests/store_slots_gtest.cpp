// The migration that added GPU slots to a database an older kfleetd left (SQLite). The slot
// rules themselves are part of the contract (store_contract_slots.cpp).
#include <sqlite3.h>

#include <gtest/gtest.h>

#include "../src/migrations.hpp"
#include "../src/sqlite_db.hpp"
#include "kfleet/store/store.hpp"
#include "old_sqlite.hpp"
#include "temp_dir.hpp"

namespace kfleet::store::testing {
namespace {

StorePtr open_store(const std::string& path) {
  auto r = open_sqlite_store({path, false});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(*r) : nullptr;
}

// A database at the schema version before slots, with an agent holding a running run, is
// migrated in place: each old agent becomes a host of its own, its run keeps its lease, and
// the unique index refuses a second running lease on the same slot.
TEST(StoreSlots, MigratesADatabaseFromThePreviousSchemaVersion) {
  const std::string path = sqlite_at_schema(
      sqlite::kSlotsSchemaVersion - 1,
      "INSERT INTO jobs (name, state, max_attempts, created_ms, updated_ms, current_run_id, "
      "attempts) VALUES ('old', 'benchmarking', 3, 1, 1, 1, 1);"
      "INSERT INTO agents (name, state, current_run_id, enrolled_ms, last_seen_ms) "
      "VALUES ('old-agent', 'busy', 1, 1, 1);"
      "INSERT INTO runs (job_id, agent_id, attempt, fencing_token, outcome, started_ms, "
      "lease_expires_ms) VALUES (1, 1, 1, 7, 'running', 1, 100000);"
      "UPDATE counters SET value = 7 WHERE name = 'fencing_token';");
  auto s = open_store(path);
  ASSERT_TRUE(s);
  auto agent = s->get_agent(1);
  ASSERT_TRUE(agent);
  EXPECT_EQ(agent->host, "agent:1");
  EXPECT_EQ(agent->slot, 0);
  auto run = s->get_run(1);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->host, "agent:1");
  EXPECT_FALSE(run->host_exclusive);
  EXPECT_FALSE(s->get_job(1)->host_exclusive);
  EXPECT_TRUE(s->renew_lease(1, 7, 1000, 50).ok());  // the old lease still works
  s.reset();

  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(raw,
                              "INSERT INTO jobs (name, state, max_attempts, created_ms, "
                              "updated_ms) VALUES ('sneak', 'queued', 3, 1, 1);"
                              "INSERT INTO runs (job_id, agent_id, attempt, fencing_token, "
                              "outcome, started_ms, lease_expires_ms, host, slot) "
                              "VALUES (2, 1, 1, 8, 'running', 1, 100000, 'agent:1', 0);",
                              nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_CONSTRAINT) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT version FROM schema_version", -1, &q, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(q, 0), sqlite::latest_schema_version());
  sqlite3_finalize(q);
  sqlite3_close(raw);
}

}  // namespace
}  // namespace kfleet::store::testing
