// GPU slots in the store: one running lease per (host, slot), a host-exclusive lease alone on
// its host, and the migration that added slots to a database an older kfleetd left.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include "../src/migrations.hpp"
#include "../src/sqlite_db.hpp"
#include "kfleet/store/store.hpp"
#include "temp_dir.hpp"

namespace kfleet::store::testing {
namespace {

StorePtr open_store(const std::string& path) {
  auto r = open_sqlite_store({path, false});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(*r) : nullptr;
}

std::int64_t add_job(Store& s, const std::string& name, bool exclusive = false) {
  NewJob j;
  j.name = name;
  j.gpu = "L4";
  j.content_hash = "sha256:" + name;
  j.host_exclusive = exclusive;
  auto r = s.create_job(j, 100);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->id : 0;
}

std::int64_t add_agent(Store& s, const std::string& name, const std::string& host, int slot) {
  NewAgent a;
  a.name = name;
  a.region = "r";
  a.backend = "simulated";
  a.host = host;
  a.slot = slot;
  auto r = s.enrol_agent(a, 100);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r->id : 0;
}

Verdict passed() {
  Verdict v;
  v.outcome = RunOutcome::passed;
  v.reason = "ok";
  return v;
}

TEST(StoreSlots, ASlotNeverHoldsTwoLeases) {
  auto s = open_store(":memory:");
  ASSERT_TRUE(s);
  const auto a = add_agent(*s, "gpu0", "h", 0);
  const auto again = add_agent(*s, "gpu0-restarted", "h", 0);  // same GPU, a new agent record
  const auto b = add_agent(*s, "gpu1", "h", 1);
  const auto j1 = add_job(*s, "j1"), j2 = add_job(*s, "j2"), j3 = add_job(*s, "j3");
  auto l1 = s->grant_lease(j1, a, 1000, 200);
  ASSERT_TRUE(l1.ok()) << l1.error().message;
  auto dup = s->grant_lease(j2, again, 1000, 201);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, Errc::conflict);
  EXPECT_NE(dup.error().message.find("GPU slot 0 of host h already holds run"), std::string::npos)
      << dup.error().message;
  EXPECT_TRUE(s->grant_lease(j3, b, 1000, 202).ok());  // another slot of the host is free
  auto run = s->get_run(l1->run_id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->host, "h");
  EXPECT_EQ(run->slot, 0);
  // Once the slot's run ends, the slot takes a lease again (through the restarted agent too).
  ASSERT_TRUE(s->finish_run(l1->run_id, l1->fencing_token, passed(), 300).ok());
  EXPECT_TRUE(s->grant_lease(j2, again, 1000, 301).ok());
}

TEST(StoreSlots, AHostExclusiveLeaseRunsAlone) {
  auto s = open_store(":memory:");
  ASSERT_TRUE(s);
  const auto h0 = add_agent(*s, "h0", "h", 0), h1 = add_agent(*s, "h1", "h", 1);
  const auto g0 = add_agent(*s, "g0", "g", 0);
  const auto normal = add_job(*s, "normal"), excl = add_job(*s, "excl", true);
  const auto later = add_job(*s, "later"), elsewhere = add_job(*s, "elsewhere");
  auto n = s->grant_lease(normal, h0, 1000, 200);
  ASSERT_TRUE(n.ok());
  auto refused = s->grant_lease(excl, h1, 1000, 201);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("host-exclusive and host h still runs"), std::string::npos)
      << refused.error().message;
  ASSERT_TRUE(s->finish_run(n->run_id, n->fencing_token, passed(), 300).ok());
  auto e = s->grant_lease(excl, h1, 1000, 301);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_TRUE(s->get_run(e->run_id)->host_exclusive);
  auto beside = s->grant_lease(later, h0, 1000, 302);
  ASSERT_FALSE(beside.ok());
  EXPECT_NE(beside.error().message.find("held by host-exclusive run"), std::string::npos)
      << beside.error().message;
  EXPECT_TRUE(s->grant_lease(elsewhere, g0, 1000, 303).ok());  // other hosts are not affected
  ASSERT_TRUE(s->finish_run(e->run_id, e->fencing_token, passed(), 400).ok());
  EXPECT_TRUE(s->grant_lease(later, h0, 1000, 401).ok());
}

TEST(StoreSlots, AgentsThatNameNoHostAreHostsOfTheirOwn) {
  auto s = open_store(":memory:");
  ASSERT_TRUE(s);
  const auto a = add_agent(*s, "a", "", 0), b = add_agent(*s, "b", "", 0);
  EXPECT_EQ(s->get_agent(a)->host, "agent:" + std::to_string(a));
  EXPECT_EQ(s->get_agent(b)->host, "agent:" + std::to_string(b));
  EXPECT_TRUE(s->grant_lease(add_job(*s, "x", true), a, 1000, 200).ok());
  EXPECT_TRUE(s->grant_lease(add_job(*s, "y", true), b, 1000, 200).ok());
}

TEST(StoreSlots, BadSlotIsRefused) {
  auto s = open_store(":memory:");
  ASSERT_TRUE(s);
  NewAgent a;
  a.name = "bad";
  a.slot = -1;
  auto r = s->enrol_agent(a, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
}

// A database at the schema version before slots, with an agent holding a running run, is
// migrated in place: each old agent becomes a host of its own, its run keeps its lease, and
// the unique index refuses a second running lease on the same slot.
TEST(StoreSlots, MigratesADatabaseFromThePreviousSchemaVersion) {
  const std::string path = make_temp_dir() + "/old.db";
  {
    auto db = sqlite::Db::open(path, false);
    ASSERT_TRUE(db.ok()) << db.error().message;
    ASSERT_TRUE(sqlite::migrate_to(**db, sqlite::kSlotsSchemaVersion - 1).ok());
    (*db)->exec(
        "INSERT INTO jobs (name, state, max_attempts, created_ms, updated_ms, current_run_id, "
        "attempts) VALUES ('old', 'benchmarking', 3, 1, 1, 1, 1);"
        "INSERT INTO agents (name, state, current_run_id, enrolled_ms, last_seen_ms) "
        "VALUES ('old-agent', 'busy', 1, 1, 1);"
        "INSERT INTO runs (job_id, agent_id, attempt, fencing_token, outcome, started_ms, "
        "lease_expires_ms) VALUES (1, 1, 1, 7, 'running', 1, 100000);"
        "UPDATE counters SET value = 7 WHERE name = 'fencing_token';");
  }
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
