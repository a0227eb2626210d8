// The contract suite on a real PostgreSQL server (a scratch one: initdb in a temporary
// directory, a unix socket, no TCP port), each test on its own database; plus what only
// PostgreSQL shows: migrations and their versioning on a server, reconnecting, and several
// connections writing at once (gap-free event ids, nothing leased twice), a leader fenced off.
// What each call costs in round trips is in store_postgres_costs_gtest.cpp; the scratch server
// and the helpers both use are in store_postgres_support.cpp.
#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "../src/pg_store.hpp"
#include "migration_rows.hpp"
#include "store_contract.hpp"
#include "store_postgres_support.hpp"

namespace kfleet::store::testing {
namespace {

class StopServer : public ::testing::Environment {
 public:
  void TearDown() override { server().reset(); }
};
[[maybe_unused]] const auto* const kStop = ::testing::AddGlobalTestEnvironment(new StopServer);

INSTANTIATE_TEST_SUITE_P(Postgres, StoreContract,
                         ::testing::Values(StoreBackend{
                             "postgres", [] { return open_or_fail(fresh_database()); }}),
                         StoreBackendName{});

// A job leased to an agent on the store `s`: what the event-batch tests upload to.
Result<Lease> a_running_run(Store& s, const std::string& job) {
  auto j = s.create_job(a_job(job), 1);
  if (!j) return j.error();
  auto agent = s.enrol_agent(an_agent("a"), 2);
  if (!agent) return agent.error();
  return s.grant_lease(j->id, agent->id, 60'000, 3);
}

TEST(PostgresStore, ReopenedDatabaseKeepsEverything) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  std::int64_t job_id = 0, run_id = 0, token = 0;
  {
    auto s = open_or_fail(url);
    ASSERT_TRUE(s);
    job_id = s->create_job(a_job("kept"), 10)->id;
    auto agent = s->enrol_agent(an_agent("a"), 11);
    ASSERT_TRUE(agent.ok()) << agent.error().message;
    auto lease = s->grant_lease(job_id, agent->id, 30'000, 12);
    ASSERT_TRUE(lease.ok()) << lease.error().message;
    run_id = lease->run_id;
    token = lease->fencing_token;
    ASSERT_TRUE(s->put_bundle("sha256:bin", std::string("\x00\x01\xff bytes", 9)).ok());
  }
  auto s = open_or_fail(url);
  ASSERT_TRUE(s);
  auto job = s->get_job(job_id);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state, JobState::leased);
  EXPECT_EQ(job->current_run_id, run_id);
  EXPECT_EQ(s->get_run(run_id)->fencing_token, token);
  EXPECT_EQ(*s->get_bundle("sha256:bin"), std::string("\x00\x01\xff bytes", 9));
  EXPECT_EQ(query_one(url, "SELECT version FROM schema_version"),
            std::to_string(pg::latest_schema_version()));
}

// A lost run that never started counts its job's lost runs (runs.inc). Its generic plan once
// ANDed in the outcome index and read every lost run of the fleet (0.61 ms a call at 13,000 lost
// runs, docs/performance.md): it must reach the job's entries through runs_job_outcome, with
// the rows a drain leaves before the table is analyzed.
TEST(PostgresStore, ALostRunCountsItsJobsLostRunsThroughTheJobsEntries) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  ASSERT_TRUE(open_or_fail(url));
  query_one(url,
            "SET session_replication_role = replica;"
            "INSERT INTO jobs (id, name, state, max_attempts, created_ms, updated_ms)"
            " SELECT g, 'j' || g, 'passed', 3, 0, 0 FROM generate_series(1, 5000) g;"
            "INSERT INTO runs (job_id, agent_id, attempt, fencing_token, outcome, started_ms,"
            " lease_expires_ms) SELECT 1 + (g * 7919) % 5000, 1, 1, g, 'lost', 0, g"
            " FROM generate_series(1, 3000) g");
  const std::string plan = query_one(
      url,
      "SET plan_cache_mode = force_generic_plan;"
      "PREPARE c(bigint) AS SELECT COUNT(*) FROM runs WHERE job_id = $1 AND outcome = 'lost'"
      " AND stage = '' AND events_contiguous = 0;"
      "EXPLAIN (FORMAT JSON) EXECUTE c(777)");
  EXPECT_NE(plan.find("runs_job_outcome"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("runs_outcome_expiry"), std::string::npos) << plan;
}

// A store opened on a database at schema `version` holding `rows`: migrated to the latest.
StorePtr migrated_from(int version, const std::string& rows) {
  const std::string url = database_at_schema(version);
  if (url.empty()) return nullptr;
  query_one(url, rows);
  auto s = open_or_fail(url);
  if (s) {
    EXPECT_EQ(query_one(url, "SELECT version FROM schema_version"),
              std::to_string(pg::latest_schema_version()));
  }
  return s;
}

// Rows written before set_by and cancelled_by existed get the user from the reason text the
// API wrote then, or the job's submitter for a baseline kfleetd set itself; else "".
TEST(PostgresStore, MigrationFillsSetByAndCancelledByOfOldRows) {
  auto s = migrated_from(pg::kAuditFieldsSchemaVersion - 1, kRowsBeforeAuditFields);
  ASSERT_TRUE(s);
  expect_audit_fields_migrated(*s);
}

// Jobs stored before a job's language was a column get it from their stored spec, or cuda
// when it names none (or is not an object), so the scheduler's scan of the queue reads it.
TEST(PostgresStore, MigrationGivesOldJobsTheLanguageOfTheirSpec) {
  auto s = migrated_from(pg::kJobLanguageSchemaVersion - 1, kJobsBeforeLanguageColumn);
  ASSERT_TRUE(s);
  expect_languages_migrated(*s);
}

TEST(PostgresStore, RefusesANewerSchema) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  ASSERT_TRUE(open_or_fail(url));
  query_one(url, "UPDATE schema_version SET version = 99");
  auto r = open_postgres_store({url});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_NE(r.error().message.find("schema version 99, newer than this kfleetd knows"),
            std::string::npos)
      << r.error().message;
}

TEST(PostgresStore, ANonKfleetDatabaseIsRefusedClearly) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  query_one(url, "CREATE TABLE schema_version (v TEXT)");
  auto r = open_postgres_store({url});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("kfleet database"), std::string::npos) << r.error().message;
}

TEST(PostgresStore, AMissingServerIsAClearError) {
  auto r = open_postgres_store({"postgresql:///nodb?host=/nonexistent-kfleet-dir&user=x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::unavailable);
  EXPECT_NE(r.error().message.find("cannot connect to PostgreSQL"), std::string::npos)
      << r.error().message;
  EXPECT_TRUE(is_postgres_url("postgresql://h/db"));
  EXPECT_TRUE(is_postgres_url("postgres://h/db"));
  EXPECT_FALSE(is_postgres_url("/var/lib/kfleet/kfleet.db"));
}

TEST(PostgresStore, ReconnectsAfterTheServerDropsTheConnection) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  auto s = open_or_fail(url);
  ASSERT_TRUE(s);
  auto j = s->create_job(a_job("before"), 1);
  ASSERT_TRUE(j.ok());
  // Every other session on this database is terminated, the store's included.
  const std::string db = url.substr(url.find(":///") + 4, url.find('?') - url.find(":///") - 4);
  query_one(server()->url("postgres"),
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
                db + "'");
  auto j2 = s->create_job(a_job("after"), 2);  // a write reopens the connection
  ASSERT_TRUE(j2.ok()) << j2.error().message;
  query_one(server()->url("postgres"),
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
                db + "'");
  auto back = s->get_job(j->id);  // so does a read
  ASSERT_TRUE(back);
  EXPECT_EQ(back->name, "before");
}

// A standby's store reads what the leader wrote, and PostgreSQL itself refuses its writes:
// through the Store (an error, nothing stored), through its connection directly (SQLSTATE
// 25006, so no code path of the store can write), and again after a reconnect.
TEST(PostgresStore, AReadOnlyStoreReadsAndItsWritesAreRefusedByTheServer) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  auto rw = open_or_fail(url);
  ASSERT_TRUE(rw);
  auto job = rw->create_job(a_job("seen"), 10);
  ASSERT_TRUE(job.ok());
  ApiToken t;
  t.user = "alice";
  t.scope = "read";
  t.token_hash = std::string(64, 'a');
  auto tok = rw->create_token(t, 11);
  ASSERT_TRUE(tok.ok());

  PostgresOptions o{url};
  o.read_only = true;
  auto ro = open_postgres_store(o);
  ASSERT_TRUE(ro.ok()) << ro.error().message;
  auto& st = **ro;
  ASSERT_TRUE(st.get_job(job->id));
  EXPECT_EQ(st.get_job(job->id)->name, "seen");
  EXPECT_EQ(st.list_jobs({}).size(), 1u);
  EXPECT_EQ(st.job_events(job->id, 0, 100).size(), rw->job_events(job->id, 0, 100).size());
  ASSERT_TRUE(st.find_token_by_hash(t.token_hash));

  auto w = st.create_job(a_job("never"), 12);
  ASSERT_FALSE(w.ok()) << "a read-only store must not write";
  EXPECT_EQ(w.error().code, Errc::unavailable);
  EXPECT_NE(w.error().message.find("read-only"), std::string::npos) << w.error().message;
  EXPECT_FALSE(st.revoke_token(tok->id, 13).ok());
  EXPECT_FALSE(st.enrol_agent(an_agent("never"), 14).ok());
  EXPECT_EQ(query_one(url, "SELECT count(*) FROM jobs"), "1");
  EXPECT_EQ(query_one(url, "SELECT count(*) FROM agents"), "0");
  EXPECT_EQ(query_one(url, "SELECT revoked_ms FROM api_tokens WHERE id = " +
                               std::to_string(tok->id)),
            "0");

  // The connection itself, outside the store's transactions, and after a reconnect.
  auto db = pg::Db::open(url, "kfleetd-standby-test");
  ASSERT_TRUE(db.ok()) << db.error().message;
  (*db)->set_read_only();
  auto write_state = [&]() -> std::string {
    try {
      (*db)->exec("UPDATE counters SET value = value + 1");
      return "written";
    } catch (const pg::DbError& e) {
      return e.sqlstate;
    }
  };
  EXPECT_EQ(write_state(), "25006");
  const std::string name = url.substr(url.find(":///") + 4, url.find('?') - url.find(":///") - 4);
  query_one(server()->url("postgres"),
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
                name + "' AND application_name = 'kfleetd-standby-test'");
  (*db)->ensure_connected();  // fails on the dead connection, or reopens it
  std::string after = write_state();
  if (after != "25006") {
    ASSERT_TRUE((*db)->ensure_connected());
    after = write_state();
  }
  EXPECT_EQ(after, "25006") << "a reconnected read-only connection must stay read-only";
  // The store reconnects too, still read-only.
  query_one(server()->url("postgres"),
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
                name + "' AND application_name = 'kfleetd-standby'");
  ASSERT_TRUE(st.get_job(job->id));
  EXPECT_FALSE(st.create_job(a_job("never-2"), 15).ok());
  EXPECT_EQ(query_one(url, "SELECT count(*) FROM jobs"), "1");
}

// One leader at a time; a takeover bumps the epoch, and the old leader's store is fenced off.
TEST(PostgresStore, OneLeaderAtATimeAndTheOldOneIsFenced) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  auto a = PostgresLeader::connect(url);
  auto b = PostgresLeader::connect(url);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(*(*a)->try_acquire(1));
  EXPECT_FALSE(*(*b)->try_acquire(2)) << "a second leader while the first holds the lock";
  EXPECT_TRUE((*a)->still_leader());
  EXPECT_FALSE((*b)->still_leader());
  ASSERT_TRUE((*a)->set_url("http://a:1").ok());
  EXPECT_EQ((*b)->current()->url, "http://a:1");
  const auto epoch_a = (*a)->epoch();
  auto store_a = open_postgres_store({url, epoch_a});
  ASSERT_TRUE(store_a.ok());
  ASSERT_TRUE((*store_a)->create_job(a_job("by-a"), 3).ok());

  a->reset();  // the leader's connection closes (as when its process is killed)
  // The server lets the lock go once its backend has seen the connection close: poll, as a
  // standby does.
  bool took = false;
  for (int i = 0; i < 200 && !took; ++i) {
    auto r = (*b)->try_acquire(4);
    ASSERT_TRUE(r.ok()) << r.error().message;
    took = *r;
    if (!took) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(took) << "the lock was not released within 5 s of the leader's disconnect";
  EXPECT_EQ((*b)->epoch(), epoch_a + 1);
  EXPECT_TRUE((*b)->still_leader());
  auto late = (*store_a)->create_job(a_job("late-a"), 5);
  ASSERT_FALSE(late.ok()) << "the old leader's writes must be refused";
  EXPECT_EQ(late.error().code, Errc::unavailable);
  EXPECT_NE(late.error().message.find("no longer the leader"), std::string::npos)
      << late.error().message;
  auto store_b = open_postgres_store({url, (*b)->epoch()});
  ASSERT_TRUE(store_b.ok());
  EXPECT_TRUE((*store_b)->create_job(a_job("by-b"), 6).ok());
  EXPECT_EQ((*store_b)->list_jobs({}).size(), 2u);
}

// Events stored a row each before migration 10 come back the same from the batches it made
// of them, and the ids and seqs that follow continue theirs.
TEST(PostgresStore, MigrationKeepsEveryEventStoredARowEach) {
  const std::string url = database_at_schema(pg::kEventBatchesSchemaVersion - 1);
  ASSERT_FALSE(url.empty());
  query_one(url,
            "INSERT INTO jobs (id, name, state, state_reason, max_attempts, created_ms, "
            "updated_ms, current_run_id) VALUES (1, 'old', 'running', '', 3, 1, 1, 1)");
  query_one(url,
            "INSERT INTO agents (id, name, token_hash, state, current_run_id, enrolled_ms, "
            "last_seen_ms) VALUES (1, 'a', 'h', 'busy', 1, 1, 1)");
  query_one(url,
            "INSERT INTO runs (id, job_id, agent_id, attempt, fencing_token, outcome, started_ms, "
            "lease_expires_ms, events_contiguous) VALUES (1, 1, 1, 1, 7, 'running', 1, "
            "9000000000000000, 2)");
  query_one(url,
            "INSERT INTO events (id, job_id, run_id, seq, ts_ms, type, data) VALUES "
            "(1, 1, 0, 1, 10, 'job.submitted', '{}'), (2, 1, 1, 2, 11, 'log', '{\"n\":2}'), "
            "(3, 1, 1, 1, 12, 'log', '{\"n\":1}'), (4, 1, 0, 2, 13, 'job.state', '{}')");
  query_one(url, "UPDATE counters SET value = 4 WHERE name = 'event_id'");
  auto s = open_or_fail(url);
  ASSERT_TRUE(s);
  auto all = s->events_after(0, 100);
  ASSERT_EQ(all.size(), 4u);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].id, static_cast<std::int64_t>(i + 1));
  EXPECT_EQ(all[1].data["n"], 2);
  EXPECT_EQ(all[2].ts_ms, 12);
  auto run = s->run_events(1, 0, 100);
  ASSERT_EQ(run.size(), 2u);
  EXPECT_EQ(run[0].seq, 1);
  EXPECT_EQ(run[0].id, 3);
  Event third;
  third.seq = 3;
  third.type = "log";
  third.data = {{"n", 3}};
  auto r = s->append_run_events(1, 7, {third}, 14, 1);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->contiguous, 3);
  auto e = s->append_job_event(1, "note", {{"x", 1}}, 15);
  EXPECT_EQ(e.id, 6);
  EXPECT_EQ(e.seq, 3);  // after the job's own 1 and 2
  EXPECT_EQ(query_one(url, "SELECT string_agg(id || ':' || run_id || ':' || seq, ' ' ORDER BY id) "
                           "FROM events"),
            "1:0:1 2:1:2 3:1:1 4:0:2 5:1:3 6:0:3");
}

// A batch goes in as arrays: duplicates inside it, gaps, and payloads with quotes,
// backslashes, braces, commas and non-ASCII text all come back as sent; a type with a NUL
// byte is refused.
TEST(PostgresStore, EventBatchesKeepTheirContentDuplicatesAndWatermark) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  auto s = open_or_fail(url);
  ASSERT_TRUE(s);
  auto l = a_running_run(*s, "batch");
  ASSERT_TRUE(l.ok()) << l.error().message;
  auto ev = [](std::int64_t seq, const std::string& line) {
    Event e;
    e.seq = seq;
    e.type = "log \"q\" {x,y}";
    e.data = {{"line", line}};
    return e;
  };
  const std::string tricky = "a \"quoted\" \\back\\slash, {brace} \u00e9\u6f22 NULL \t tab";
  auto r = s->append_run_events(l->run_id, l->fencing_token,
                                {ev(3, tricky), ev(1, "one"), ev(1, "one again"), ev(2, "two"),
                                 ev(5, "five")},
                                4);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->accepted, 4);
  EXPECT_EQ(r->duplicates, 1);
  EXPECT_EQ(r->contiguous, 3);
  auto r2 = s->append_run_events(l->run_id, l->fencing_token, {ev(4, "four"), ev(2, "dup")}, 5);
  ASSERT_TRUE(r2.ok()) << r2.error().message;
  EXPECT_EQ(r2->accepted, 1);
  EXPECT_EQ(r2->duplicates, 1);
  EXPECT_EQ(r2->contiguous, 5);
  auto got = s->run_events(l->run_id, 0, 100);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].data["line"], "one") << "the first of a duplicated seq is kept";
  EXPECT_EQ(got[2].data["line"], tricky);
  EXPECT_EQ(got[2].type, "log \"q\" {x,y}");
  auto all = s->events_after(0, 1000);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].id, static_cast<std::int64_t>(i + 1));
  // PostgreSQL's text holds no NUL: a type with one is refused by name, and nothing is stored.
  Event nul = ev(6, "six");
  nul.type = std::string("log\0x", 5);
  auto r3 = s->append_run_events(l->run_id, l->fencing_token, {ev(7, "seven"), nul}, 6);
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.error().code, Errc::invalid_argument);
  EXPECT_NE(r3.error().message.find("NUL"), std::string::npos) << r3.error().message;
  EXPECT_EQ(s->events_after(0, 1000).size(), all.size());
}

// A batch's arrays are compressed with lz4 on a server that has it (migration 11): a batch of
// 500 events is stored in a few KB, not in some twenty uncompressed TOAST rows, and reads back
// as sent.
TEST(PostgresStore, ABatchOfEventsIsStoredCompressedWithLz4) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  ASSERT_GE(std::stoi(query_one(url, "SHOW server_version_num")), 140000)
      << "column compression needs PostgreSQL 14 or newer; the test's server is older";
  auto s = open_or_fail(url);
  ASSERT_TRUE(s);
  auto l = a_running_run(*s, "big");
  ASSERT_TRUE(l.ok()) << l.error().message;
  std::vector<Event> batch;
  for (int i = 1; i <= 500; ++i) {
    Event e;
    e.seq = i;
    e.type = "bench.samples";
    e.data = {{"i", i}, {"samples_us", {10.1, 10.2, 10.3}}};
    batch.push_back(e);
  }
  auto r = s->append_run_events(l->run_id, l->fencing_token, batch, 4);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->accepted, 500);
  const std::string where = " FROM event_batches WHERE run_id = " + std::to_string(l->run_id);
  for (const char* col : {"seqs", "ts_ms", "types", "datas"})
    EXPECT_EQ(query_one(url, std::string("SELECT pg_column_compression(") + col + ")" + where),
              "lz4")
        << col;
  EXPECT_LT(std::stoll(query_one(url, "SELECT pg_column_size(datas)" + where)), 8000)
      << "500 events' data, about 22 KB as text";
  auto got = s->run_events(l->run_id, 0, 1000);
  ASSERT_EQ(got.size(), 500u);
  EXPECT_EQ(got[499].data, batch[499].data);
  EXPECT_EQ(got[0].type, "bench.samples");
}

// Several connections (as several kfleetd would have) write at once: every call succeeds or
// fails cleanly, event ids are exactly 1..N, each job's seqs are 1..n, and no job or agent is
// ever leased twice.
TEST(PostgresStore, ConcurrentWritersKeepEventIdsGapFreeAndLeaseOnce) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  constexpr int kWriters = 4, kJobs = 40, kAgentsPerWriter = 3;
  std::vector<std::int64_t> job_ids;
  {
    auto s = open_or_fail(url);
    ASSERT_TRUE(s);
    for (int i = 0; i < kJobs; ++i) job_ids.push_back(s->create_job(a_job("j" + std::to_string(i)), i)->id);
  }
  std::atomic<int> granted{0}, conflicts{0}, failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto s = open_or_fail(url);
      if (!s) return;
      TimeMs now = 1000 + w;
      for (int a = 0; a < kAgentsPerWriter; ++a) {
        auto agent = s->enrol_agent(an_agent("w" + std::to_string(w) + "a" + std::to_string(a)), ++now);
        if (!agent.ok()) { ++failures; continue; }
        // Each agent tries every job until one lease sticks, then runs it to the end.
        for (auto id : job_ids) {
          auto l = s->grant_lease(id, agent->id, 60'000, ++now);
          if (!l.ok()) {
            if (l.error().code == Errc::conflict) ++conflicts; else ++failures;
            continue;
          }
          ++granted;
          std::vector<Event> evs;
          for (int q = 1; q <= 5; ++q) {
            Event e;
            e.seq = q;
            e.type = "log";
            e.data = {{"line", q}};
            evs.push_back(e);
          }
          if (!s->append_run_events(l->run_id, l->fencing_token, evs, ++now).ok()) ++failures;
          // a replay and a stale token: no ids used
          if (!s->append_run_events(l->run_id, l->fencing_token, evs, ++now).ok()) ++failures;
          if (s->append_run_events(l->run_id, l->fencing_token + 1000, evs, ++now).ok()) ++failures;
          s->append_job_event(id, "note", {{"w", w}}, ++now);
          Verdict v;
          v.outcome = RunOutcome::passed;
          if (!s->finish_run(l->run_id, l->fencing_token, v, ++now).ok()) ++failures;
          break;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(granted.load(), kWriters * kAgentsPerWriter);

  auto s = open_or_fail(url);
  ASSERT_TRUE(s);
  auto all = s->events_after(0, 1'000'000);
  ASSERT_FALSE(all.empty());
  for (std::size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(all[i].id, static_cast<std::int64_t>(i + 1)) << "event ids must be 1..N";
  EXPECT_EQ(query_one(url, "SELECT value FROM counters WHERE name = 'event_id'"),
            std::to_string(all.size()));
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int64_t>> seqs;
  for (const auto& e : all) seqs[{e.job_id, e.run_id}].push_back(e.seq);
  for (auto& [key, v] : seqs) {
    std::sort(v.begin(), v.end());
    for (std::size_t i = 0; i < v.size(); ++i)
      ASSERT_EQ(v[i], static_cast<std::int64_t>(i + 1))
          << "job " << key.first << " run " << key.second << ": seqs must be 1..n";
  }
  std::set<std::int64_t> leased_jobs, agents;
  int runs = 0;
  for (auto id : job_ids) {
    auto rs = s->runs_for_job(id);
    EXPECT_LE(rs.size(), 1u) << "job " << id << " was leased twice";
    for (const auto& r : rs) {
      ++runs;
      leased_jobs.insert(r.job_id);
      EXPECT_TRUE(agents.insert(r.agent_id).second) << "agent " << r.agent_id << " ran two jobs";
      EXPECT_EQ(r.outcome, RunOutcome::passed);
    }
  }
  EXPECT_EQ(runs, kWriters * kAgentsPerWriter);
}

// A database error in the middle of a batch of state changes (a trigger that raises on one
// change's UPDATE) fails every change of the batch and writes none of them.
TEST(PostgresStore, ADatabaseErrorInABatchOfStateChangesFailsAllAndWritesNone) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  auto s = open_or_fail(url);
  ASSERT_TRUE(s);
  StoreContract::check_a_failing_batch_writes_nothing(
      *s,
      [&] {
        query_one(url,
                  "CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                  "IF NEW.state_reason = 'boom' THEN RAISE EXCEPTION 'injected failure'; END IF; "
                  "RETURN NEW; END $$; "
                  "CREATE TRIGGER refuse_boom BEFORE UPDATE ON jobs FOR EACH ROW "
                  "EXECUTE FUNCTION refuse_boom()");
      },
      [&] { query_one(url, "DROP TRIGGER refuse_boom ON jobs"); });
}

}  // namespace
}  // namespace kfleet::store::testing
