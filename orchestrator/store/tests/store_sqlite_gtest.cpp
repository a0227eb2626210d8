// The contract suite on SQLite (in memory and in a file), plus what only a file can show:
// reopening, migrations and their versioning.
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <thread>

#include "../src/migrations.hpp"
#include "../src/shared/in_flight_sql.hpp"
#include "../src/sqlite_db.hpp"
#include "migration_rows.hpp"
#include "old_sqlite.hpp"
#include "store_contract.hpp"
#include "temp_dir.hpp"

namespace kfleet::store::testing {
namespace {

StorePtr open_or_die(const std::string& path, bool full = false) {
  auto r = open_sqlite_store({path, full});
  if (!r.ok()) {
    ADD_FAILURE() << r.error().message;
    return nullptr;
  }
  return std::move(*r);
}

[[maybe_unused]] const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new TempDirCleanup);

INSTANTIATE_TEST_SUITE_P(
    Sqlite, StoreContract,
    ::testing::Values(StoreBackend{"memory", [] { return open_or_die(":memory:"); }},
                      StoreBackend{"file", [] { return open_or_die(make_temp_dir() + "/k.db"); }},
                      StoreBackend{"file_full",
                                   [] { return open_or_die(make_temp_dir() + "/k.db", true); }}),
    StoreBackendName{});

// Runs one SQL query on its own connection and returns the first column of the first row.
std::string query_one(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
    out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  else
    ADD_FAILURE() << "query failed: " << sql << ": " << sqlite3_errmsg(db);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

// A store opened on a database at schema `version` holding `rows`: migrated to the latest.
StorePtr migrated_from(int version, const std::string& rows) {
  const std::string path = sqlite_at_schema(version, rows);
  auto s = open_or_die(path);
  const std::string latest = std::to_string(sqlite::latest_schema_version());
  EXPECT_EQ(query_one(path, "SELECT version FROM schema_version"), latest);
  return s;
}

TEST(SqliteStore, ReopenedFileKeepsEverything) {
  const std::string path = make_temp_dir() + "/kfleet.db";
  std::int64_t job_id = 0, run_id = 0, agent_id = 0, token = 0, queued_id = 0;
  {
    auto s = open_or_die(path);
    ASSERT_TRUE(s);
    NewJob nj;
    nj.name = "kept";
    nj.content_hash = "sha256:kept";
    nj.regions = {"r1"};
    job_id = s->create_job(nj, 10)->id;
    nj.name = "waiting";
    queued_id = s->create_job(nj, 11)->id;
    NewAgent na;
    na.name = "a";
    na.backend = "simulated";
    agent_id = s->enrol_agent(na, 12)->id;
    auto l = s->grant_lease(job_id, agent_id, 1000, 13);
    ASSERT_TRUE(l.ok());
    run_id = l->run_id;
    token = l->fencing_token;
    Event e;
    e.seq = 1;
    e.type = "log";
    ASSERT_TRUE(s->append_run_events(run_id, token, {e}, 14).ok());
    s->put_region_block({"simulated", "r1", "", "stockout", "none left", 3, 1, 2});
    ASSERT_TRUE(s->put_bundle("sha256:b", "body").ok());
  }
  auto s = open_or_die(path);
  ASSERT_TRUE(s);
  auto job = s->get_job(job_id);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->name, "kept");
  EXPECT_EQ(job->state, JobState::leased);
  EXPECT_EQ(job->current_run_id, run_id);
  EXPECT_EQ(s->find_job_by_content_hash("sha256:kept")->id, queued_id);
  EXPECT_EQ(s->get_agent(agent_id)->state, AgentState::busy);
  EXPECT_TRUE(s->get_agent(agent_id)->simulated());
  EXPECT_EQ(s->get_run(run_id)->events_contiguous, 1);
  EXPECT_EQ(s->run_events(run_id, 0, 10).size(), 1u);
  ASSERT_EQ(s->region_blocks().size(), 1u);
  EXPECT_EQ(s->region_blocks()[0].strikes, 3);
  EXPECT_EQ(s->get_bundle("sha256:b").value_or(""), "body");
  // The lease still fences after a restart, and new tokens continue above the old ones.
  ASSERT_TRUE(s->renew_lease(run_id, token, 1000, 20).ok());
  NewAgent nb;
  nb.name = "b";
  auto b = s->enrol_agent(nb, 21);
  auto l2 = s->grant_lease(queued_id, b->id, 1000, 22);
  ASSERT_TRUE(l2.ok());
  EXPECT_GT(l2->fencing_token, token);
}

TEST(SqliteStore, MigrationsRunOnceAndReopeningChangesNothing) {
  const std::string path = make_temp_dir() + "/kfleet.db";
  {
    auto s = open_or_die(path);
    ASSERT_TRUE(s);
    NewJob nj;
    nj.name = "j";
    ASSERT_TRUE(s->create_job(nj, 1).ok());
  }
  const std::string version = query_one(path, "SELECT version FROM schema_version");
  EXPECT_EQ(version, "11");  // 1: core tables; 2: baselines, regression runs; 3: tokens, audit;
                            // 4: GPU slots; 5: baselines.set_by, jobs.cancelled_by;
                            // 6: the live agents' index
                            // 7: job_origins; 8: enrolment tokens, who enrolled each agent;
                            // 9: jobs.token_key, the live jobs by token
                            // 10: jobs.language; 11: runs by job and outcome
  for (int i = 0; i < 3; ++i) {
    auto s = open_or_die(path);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->list_jobs({}).size(), 1u);
  }
  EXPECT_EQ(query_one(path, "SELECT COUNT(*) FROM schema_version"), "1");
  EXPECT_EQ(query_one(path, "SELECT version FROM schema_version"), version);
  EXPECT_EQ(query_one(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query_one(path, "PRAGMA integrity_check"), "ok");
}

// Rows written before set_by and cancelled_by existed: the user is taken from the reason text
// the API wrote then ("set by X", "<reason> (set by X)", "cancelled by X"), or from the job's
// submitter for a baseline kfleetd set itself; anything else is "".
TEST(SqliteStore, MigrationFillsSetByAndCancelledByOfOldRows) {
  auto s = migrated_from(sqlite::kAuditFieldsSchemaVersion - 1, kRowsBeforeAuditFields);
  ASSERT_TRUE(s);
  expect_audit_fields_migrated(*s);
}

// A token's jobs in flight are counted from its live jobs, not its history: the migration that
// put a job's token on its row fills it for the jobs already stored, and the count's statement
// reads the partial index of live jobs (a token with thousands of finished jobs would
// otherwise cost every submit a walk through all of them).
TEST(SqliteStore, ATokensInFlightCountReadsItsLiveJobsNotItsHistory) {
  const std::string path = sqlite_at_schema(
      sqlite::kLiveTokenSchemaVersion - 1,
      "INSERT INTO jobs (name, state, max_attempts, created_ms, updated_ms) VALUES "
      "('old-done', 'passed', 3, 1, 1), ('old-queued', 'queued', 3, 1, 1), "
      "('other', 'running', 3, 1, 1), ('no-origin', 'queued', 3, 1, 1);"
      "INSERT INTO job_origins (job_id, token_key) VALUES (1, 'tok'), (2, 'tok'), (3, 'tok-2');");
  auto s = open_or_die(path);
  ASSERT_TRUE(s);
  EXPECT_EQ(query_one(path, "SELECT GROUP_CONCAT(token_key, ',') FROM (SELECT token_key FROM "
                            "jobs ORDER BY id)"),
            "tok,tok,tok-2,");
  EXPECT_EQ(s->in_flight_jobs_of("tok"), 1);
  EXPECT_EQ(s->in_flight_jobs_of("tok-2"), 1);
  NewJob nj;
  nj.name = "new";
  nj.max_attempts = 1;
  nj.token_key = "tok";
  ASSERT_TRUE(s->create_job(nj, 2).ok());
  EXPECT_EQ(s->in_flight_jobs_of("tok"), 2);
  // The plan of the statement as the store runs it, on its own connection.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, (std::string("EXPLAIN QUERY PLAN ") + kInFlightSql).c_str(),
                               -1, &q, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(raw);
  sqlite3_bind_text(q, 1, "tok", -1, SQLITE_STATIC);
  std::string plan;
  while (sqlite3_step(q) == SQLITE_ROW)
    plan += reinterpret_cast<const char*>(sqlite3_column_text(q, 3)) + std::string("\n");
  sqlite3_finalize(q);
  sqlite3_close(raw);
  EXPECT_NE(plan.find("jobs_live_token"), std::string::npos) << plan;
}

// Jobs stored before a job's language was a column get it from their stored spec, or cuda
// when it names none (or is not an object), so the scheduler's scan of the queue reads it.
TEST(SqliteStore, MigrationGivesOldJobsTheLanguageOfTheirSpec) {
  auto s = migrated_from(sqlite::kJobLanguageSchemaVersion - 1, kJobsBeforeLanguageColumn);
  ASSERT_TRUE(s);
  expect_languages_migrated(*s);
}

TEST(SqliteStore, ADatabaseFromANewerVersionIsRefused) {
  const std::string path = make_temp_dir() + "/kfleet.db";
  { ASSERT_TRUE(open_or_die(path)); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE schema_version SET version = 999", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto r = open_sqlite_store({path, false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("newer"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("999"), std::string::npos) << r.error().message;
}

// The WAL is checkpointed on a thread of its own. Beside a writer that never pauses such a
// checkpoint cannot let the WAL start over, so the writer copies the rest itself past a bound:
// the WAL file stays bounded, and everything written is in the database.
TEST(SqliteStore, TheWalStaysBoundedUnderAWriterThatNeverPauses) {
  const std::string path = make_temp_dir() + "/kfleet.db";
  constexpr int kBatches = 400, kPerBatch = 500;
  std::uintmax_t largest_wal = 0;
  {
    auto s = open_or_die(path);
    ASSERT_TRUE(s);
    NewJob nj;
    nj.name = "loud";
    auto job = s->create_job(nj, 1);
    NewAgent na;
    na.name = "a";
    auto agent = s->enrol_agent(na, 2);
    ASSERT_TRUE(job.ok() && agent.ok());
    auto lease = s->grant_lease(job->id, agent->id, 1'000'000, 3);
    ASSERT_TRUE(lease.ok()) << lease.error().message;
    for (int b = 0; b < kBatches; ++b) {
      std::vector<Event> batch;
      for (int i = 0; i < kPerBatch; ++i) {
        Event e;
        e.seq = b * kPerBatch + i + 1;
        e.type = "log";
        e.data_text = R"({"text":")" + std::string(100, 'x') + R"("})";
        batch.push_back(std::move(e));
      }
      auto r = s->append_run_events(lease->run_id, lease->fencing_token, batch, 4);
      ASSERT_TRUE(r.ok()) << r.error().message;
      ASSERT_EQ(r->accepted, kPerBatch);
      std::error_code ec;
      largest_wal = std::max(largest_wal, std::filesystem::file_size(path + "-wal", ec));
    }
  }
  // ~60 MB of events went through the WAL; at SQLite's 4 KB pages the bound is 4,000 pages,
  // plus what is committed while the background pass that reached it finishes.
  EXPECT_GT(largest_wal, 4u << 20);  // the WAL did fill past the first checkpoint
  EXPECT_LT(largest_wal, 32u << 20) << "the WAL grew without bound";
  EXPECT_EQ(query_one(path, "SELECT COUNT(*) FROM events WHERE run_id != 0"),
            std::to_string(kBatches * kPerBatch));
  EXPECT_EQ(query_one(path, "SELECT data FROM events WHERE seq = 77 AND run_id != 0"),
            R"({"text":")" + std::string(100, 'x') + R"("})");
  EXPECT_EQ(query_one(path, "PRAGMA integrity_check"), "ok");
}

TEST(SqliteStore, AnUnusablePathIsAnErrorThatNamesIt) {
  auto r = open_sqlite_store({"/nonexistent-dir-kfleet/x/k.db", false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent-dir-kfleet/x/k.db"), std::string::npos);
  auto empty = open_sqlite_store({"", false});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, Errc::invalid_argument);
}

// A database error in the middle of a batch of state changes (a trigger that aborts one change's
// UPDATE) fails every change of the batch and writes none of them: the changes before it are
// rolled back too, not committed beside an error.
TEST(SqliteStore, ADatabaseErrorInABatchOfStateChangesFailsAllAndWritesNone) {
  const std::string path = make_temp_dir() + "/k.db";
  auto s = open_or_die(path);
  ASSERT_TRUE(s);
  auto exec = [&](const char* sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  };
  StoreContract::check_a_failing_batch_writes_nothing(
      *s,
      [&] {
        exec("CREATE TRIGGER refuse_boom BEFORE UPDATE ON jobs WHEN NEW.state_reason = 'boom' "
             "BEGIN SELECT RAISE(ABORT, 'injected failure'); END");
      },
      [&] { exec("DROP TRIGGER refuse_boom"); });
}

}  // namespace
}  // namespace kfleet::store::testing

namespace kfleet::store::testing {
namespace {

// Two kfleetd processes on one file (a failover's overlap) each let an agent in with the same
// single-use token at the same moment: the token's use is one conditional write, so exactly
// one enrolment is stored.
TEST(SqliteStore, TwoEnrolmentsRacingOnASingleUseTokenLetExactlyOneIn) {
  const std::string path = make_temp_dir() + "/k.db";
  auto first = open_or_die(path);
  auto second = open_or_die(path);
  ASSERT_TRUE(first && second);
  for (int round = 0; round < 20; ++round) {
    EnrolToken t;
    t.name = "race";
    t.token_hash = std::string(60, 'b') + std::to_string(1000 + round);
    t.max_uses = 1;
    t.created_by = "alice";
    ASSERT_TRUE(first->create_enrol_token(t, 100).ok());
    auto try_with = [&](Store& s, const std::string& name) {
      NewAgent a;
      a.name = name;
      a.region = "local";
      a.backend = "cuda";
      a.gpus.push_back(GpuInfo{});
      a.token_hash = std::string(64, '0');
      a.enrol_token_hash = t.token_hash;
      return s.enrol_agent(a, 200);
    };
    std::optional<Result<AgentRecord>> ra, rb;
    std::thread ta([&] { ra = try_with(*first, "a" + std::to_string(round)); });
    std::thread tb([&] { rb = try_with(*second, "b" + std::to_string(round)); });
    ta.join();
    tb.join();
    ASSERT_TRUE(ra && rb);
    EXPECT_EQ(ra->ok() + rb->ok(), 1) << "round " << round;
    const auto& lost = ra->ok() ? *rb : *ra;
    if (!lost.ok()) {
      EXPECT_EQ(lost.error().code, Errc::unauthorized) << lost.error().message;
    }
    EXPECT_EQ(first->find_enrol_token_by_hash(t.token_hash)->uses, 1);
  }
  EXPECT_EQ(first->list_agents().size(), 20u);
}

}  // namespace
}  // namespace kfleet::store::testing
