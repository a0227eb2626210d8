// What a store call costs on PostgreSQL, checked where it is decided: the round trips of each
// call on a job's path and of a scheduling pass's grants (libpq pipeline mode, see the store's
// README, "Transactions"), that the writes queued behind a fencing check are refused with it,
// and that an agent's state changes are HOT updates. Part of store_postgres_gtest (one scratch
// server for the process).
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "../src/pg_db.hpp"
#include "../src/shared/in_flight_sql.hpp"
#include "../src/shared/lease_rules.hpp"
#include "store_contract.hpp"
#include "store_postgres_support.hpp"

namespace kfleet::store::testing {
namespace {

// Every job moves its agent idle -> busy -> idle. Those updates must be HOT (the row
// rewritten on its page, no new index entries): an index that names the state, even in its
// condition, makes each of them a new entry in every index of agents, and at hundreds of jobs
// a second the dead entries slow every read of an agent by id until autovacuum comes by.
TEST(PostgresStore, AnAgentsStateChangeIsRewrittenInPlaceAndTheLiveFleetHasItsIndex) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  auto agent = s.enrol_agent(an_agent("a"), 1);
  ASSERT_TRUE(agent.ok());
  const std::string& url = opened.url;
  const std::string id = std::to_string(agent->id);
  // One PQexec: one transaction, whose own counts pg_stat_get_xact_* reads.
  const std::string hot_updates =
      "; SELECT pg_stat_get_xact_tuples_hot_updated('agents'::regclass)";
  EXPECT_EQ(query_one(url, "UPDATE agents SET state = 'busy', current_run_id = 7 WHERE id = " +
                               id + "; UPDATE agents SET state = 'idle', current_run_id = 0, "
                               "last_seen_ms = 9 WHERE id = " + id + hot_updates),
            "2");
  // Retiring changes the live fleet's condition: that one update is not HOT, and the agent
  // leaves the live fleet's index.
  EXPECT_EQ(query_one(url, "UPDATE agents SET state = 'retired' WHERE id = " + id + hot_updates),
            "0");
  EXPECT_TRUE(s.list_agents({}).empty());
  // The live fleet's condition as list_agents spells it is the index's.
  const std::string plan =
      query_one(url, std::string("SET enable_seqscan = off; EXPLAIN (FORMAT JSON) SELECT id "
                                 "FROM agents WHERE id > 0 AND ") +
                         pg::kLiveAgent + " ORDER BY id");
  EXPECT_NE(plan.find("agents_live"), std::string::npos) << plan;
}

// A submit under a per-token in-flight limit counts the token's jobs in flight. It used to
// count them through job_origins, the token's whole history joined to jobs (230-440 ms a submit at
// 200,000 past jobs); it reads the partial index of live jobs by token, whose condition is the
// statement's. Checked on the generic plan kfleetd's session makes (plan_cache_mode), with the
// statistics of a token whose finished jobs outnumber its live ones a thousand to one.
TEST(PostgresStore, ATokensInFlightCountReadsItsLiveJobsNotItsHistory) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  const std::string& url = opened.url;
  query_one(url,
            "INSERT INTO jobs (name, state, max_attempts, created_ms, updated_ms, token_key) "
            "SELECT 'old-' || g, 'passed', 1, 1, 1, 'tok' FROM generate_series(1, 5000) g; "
            "SELECT 1");
  for (int i = 0; i < 5; ++i) {
    Submission sub;
    sub.job = a_job("live-" + std::to_string(i));
    sub.job.token_key = "tok";
    sub.in_flight_limit = 10;
    auto done = s.submit_job(sub, 2);
    ASSERT_TRUE(done.ok()) << done.error().message;
    EXPECT_EQ(done->in_flight, i);
  }
  EXPECT_EQ(s.in_flight_jobs_of("tok"), 5);
  std::string sql = kInFlightSql;
  sql.replace(sql.find('?'), 1, "$1");
  const std::string plan = query_one(
      url, "ANALYZE jobs; SET plan_cache_mode = force_generic_plan; PREPARE in_flight(text) AS " +
               sql + "; EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE in_flight('tok')");
  EXPECT_NE(plan.find("jobs_live_token"), std::string::npos) << plan;
  // No step of the plan reads more rows than the token has live jobs: not its history.
  const auto parsed = nlohmann::json::parse(plan, nullptr, false);
  ASSERT_TRUE(parsed.is_array() && !parsed.empty()) << plan;
  double most = 0;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& node) {
    most = std::max(most, node.value("Actual Rows", 0.0) * node.value("Actual Loops", 1.0));
    for (const auto& child : node.value("Plans", nlohmann::json::array())) walk(child);
  };
  walk(parsed[0]["Plan"]);
  EXPECT_LE(most, 5) << plan;
}

// The lease rules (shared/lease_rules.hpp) are one list that the grant's statement and the
// submit's with a lease both embed. Their slot rules are one NOT EXISTS over the running runs
// on the agent's host, which the partial index of running slots answers, on the generic plan
// kfleetd's session makes: a rule added to the list in a form it cannot serve would make every
// grant read every running run.
TEST(PostgresStore, TheLeaseRulesReadTheAgentsHostFromTheIndexOfRunningSlots) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  const std::string sql =
      "SELECT 1 FROM jobs j, agents a WHERE j.id = ? AND a.id = ? AND " +
      lease_rules_sql([](std::string_view column) { return "j." + std::string(column); }, "a");
  const std::string plan = query_one(
      opened.url, "SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan; "
                  "PREPARE rules(bigint, bigint) AS " + pg::number_placeholders(sql) +
                      "; EXPLAIN (FORMAT JSON) EXECUTE rules(1, 2)");
  EXPECT_NE(plan.find("runs_running_slot"), std::string::npos) << plan;
}

// What a control-plane call costs on PostgreSQL is its round trips (see the store's README,
// "Performance"): each of the calls a scheduled job makes is one or two, whatever it reads
// and writes, BEGIN, the write lock, the fencing check and the COMMIT included, and the
// reads the control plane used to make around them (the job before a grant, the run before
// an upload or a finish, the job and its regression run around a finish) come back from
// those calls at no extra round trip. A job's whole path, store call by store call, is 3
// (touch 1, grant 1, finish 1) plus 2 per event batch; kfleetd makes fewer of them (it skips
// the touch right after a finish, and a pass's grants and the finishes that arrive together
// are one round trip each: APassOfGrantsIsOneRoundTrip, FinishesTogetherAreOneRoundTrip).
TEST(PostgresStore, EachCallOfAJobsPathIsOneOrTwoRoundTrips) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  auto job = s.create_job(a_job("j"), 2);
  ASSERT_TRUE(job.ok());
  auto agent = s.enrol_agent(an_agent("a"), 3);
  ASSERT_TRUE(agent.ok());
  std::int64_t before = s.round_trips();
  std::int64_t path = 0;  // the calls every job makes, with one event batch
  auto cost = [&] {
    const auto now = s.round_trips();
    return now - std::exchange(before, now);
  };
  auto on_path = [&] {  // the cost of a call every job makes
    const auto c = cost();
    path += c;
    return c;
  };
  ASSERT_TRUE(s.touch_agent(agent->id, 4).ok());
  EXPECT_EQ(on_path(), 1) << "touch_agent";
  s.append_job_event(job->id, "note", {{"k", 1}}, 5);
  EXPECT_EQ(cost(), 1) << "append_job_event";
  JobRecord leased;
  auto lease = s.grant_lease(job->id, agent->id, 30'000, 6, {{"action", "assign"}}, &leased);
  ASSERT_TRUE(lease.ok()) << lease.error().message;
  EXPECT_EQ(on_path(), 1) << "grant_lease, the job handed back included";
  EXPECT_EQ(leased.state, JobState::leased);
  EXPECT_EQ(leased.spec, job->spec);
  ASSERT_TRUE(s.renew_lease(lease->run_id, lease->fencing_token, 30'000, 7).ok());
  EXPECT_EQ(cost(), 2) << "renew_lease";
  std::vector<Event> batch;
  for (int i = 1; i <= 50; ++i) {
    Event e;
    e.seq = i;
    e.type = i == 1 ? "stage.started" : "log";
    e.data = i == 1 ? nlohmann::json{{"stage", "build"}} : nlohmann::json{{"i", i}};
    batch.push_back(e);
  }
  auto in = s.append_run_events(lease->run_id, lease->fencing_token, batch, 8, agent->id);
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_EQ(in->accepted, 50);
  EXPECT_EQ(in->contiguous, 50);
  EXPECT_EQ(on_path(), 2) << "append_run_events, the agent's check included";
  EXPECT_EQ(s.get_job(job->id)->state, JobState::building);
  cost();
  Verdict v;
  v.outcome = RunOutcome::passed;
  auto done = s.finish_agent_run(agent->id, lease->run_id, lease->fencing_token, v, 9);
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(done->run.outcome, RunOutcome::passed);
  ASSERT_TRUE(done->job);
  EXPECT_EQ(done->job->state, JobState::passed);
  EXPECT_EQ(on_path(), 1) << "finish_agent_run, the agent's check, the job and its regression "
                             "run included";
  // touch_agent 1, grant_lease 1, one batch 2, the finish 1 (renew_lease and
  // append_job_event are not on every job's path).
  EXPECT_EQ(path, 5);
  EXPECT_EQ(s.get_job(job->id)->state, JobState::passed);
  EXPECT_EQ(s.get_agent(agent->id)->state, AgentState::idle);

  // A finish that amends the verdict reads the job before it writes: one more round trip
  // (the control plane's, for a run it did not lease itself: after a restart or takeover).
  auto job2 = s.create_job(a_job("j2"), 10);
  ASSERT_TRUE(job2.ok());
  auto lease2 = s.grant_lease(job2->id, agent->id, 30'000, 11, {}, nullptr);
  ASSERT_TRUE(lease2.ok()) << lease2.error().message;
  cost();
  bool amended = false;
  auto done2 = s.finish_agent_run(agent->id, lease2->run_id, lease2->fencing_token, v, 12,
                                  [&](const JobRecord&, Verdict&) { amended = true; });
  ASSERT_TRUE(done2.ok()) << done2.error().message;
  EXPECT_TRUE(amended);
  EXPECT_EQ(done2->job->state, JobState::passed);
  EXPECT_EQ(cost(), 2) << "finish_agent_run with an amendment";
}

// n new jobs and n new agents, a grant of each job to its agent (fewer if one could not be made).
std::vector<Store::LeaseGrant> grants_of_new_jobs(Store& s, int n, const nlohmann::json& decision) {
  std::vector<Store::LeaseGrant> grants;
  for (int i = 0; i < n; ++i) {
    auto job = s.create_job(a_job("j" + std::to_string(i)), 2);
    auto agent = s.enrol_agent(an_agent("a" + std::to_string(i)), 3);
    EXPECT_TRUE(job.ok() && agent.ok());
    if (job.ok() && agent.ok()) grants.push_back({job->id, agent->id, decision});
  }
  return grants;
}

// A job whose page's statements are prepared: the next job_page costs what a user's
// GET /api/v1/jobs/{id} does. 0 (and a failure) when the job cannot be made.
std::int64_t job_with_its_page_prepared(Store& s) {
  auto job = s.create_job(a_job("j"), 2);
  EXPECT_TRUE(job.ok());
  if (!job.ok()) return 0;
  (void)s.job_page(job->id);
  return job->id;
}

// A user's view of one job (GET /api/v1/jobs/{id}) reads the job, its runs and its origin:
// three reads, sent together, one round trip.
TEST(PostgresStore, AJobsPageIsOneRoundTrip) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  const std::int64_t id = job_with_its_page_prepared(s);
  ASSERT_NE(id, 0);
  const auto before = s.round_trips();
  const auto page = s.job_page(id);
  EXPECT_EQ(s.round_trips() - before, 1);
  ASSERT_TRUE(page.job);
  EXPECT_EQ(page.job->id, id);
}

// The time the caller is blocked on the server is counted (/metrics'
// kfleet_store_wait_seconds_total): a read held behind another session's lock on jobs (held
// for a second) counts the time it waited, and no call counts nothing.
TEST(PostgresStore, TheTimeBlockedOnTheServerIsCounted) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  const std::int64_t id = job_with_its_page_prepared(s);
  ASSERT_NE(id, 0);
  EXPECT_GT(s.wait_ns(), 0);
  // A write's round trip is named by its first statement, not by the fence that goes before
  // it (the job's insert: "WITH bundles ...").
  for (const auto& k : s.statement_waits())
    EXPECT_EQ(k.statement.find("kfleet_lock_and_fence"), std::string::npos) << k.statement;
  const auto idle = s.wait_ns();
  EXPECT_EQ(s.wait_ns(), idle) << "nothing sent, nothing waited";
  std::thread holder([&] {
    (void)query_one(opened.url, "BEGIN; LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE; "
                                "SELECT pg_sleep(1); COMMIT; SELECT 1");
  });
  const std::string held = "SELECT count(*) FROM pg_locks WHERE relation = 'jobs'::regclass AND "
                           "mode = 'AccessExclusiveLock' AND granted";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (query_one(opened.url, held) != "1" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto before = s.wait_ns();
  const auto kinds_before = s.statement_waits();
  const auto t0 = std::chrono::steady_clock::now();
  const auto page = s.job_page(id);
  const auto blocked = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - t0).count();
  holder.join();
  ASSERT_TRUE(page.job);
  EXPECT_GE(blocked, 100'000'000) << "the page did not wait for the lock";
  EXPECT_GE(s.wait_ns() - before, blocked * 9 / 10) << "counted " << (s.wait_ns() - before)
                                                    << " ns of " << blocked;
  EXPECT_LE(s.wait_ns() - before, blocked);
  // By kind: the wait went to the page's read of jobs, as one round trip of 1 ms or more.
  std::map<std::string, Store::StatementWait> was;
  for (const auto& k : kinds_before) was[k.statement] = k;
  std::string most;
  std::int64_t most_ns = 0, slow = 0;
  for (const auto& k : s.statement_waits()) {
    const auto d = k.wait_ns - was[k.statement].wait_ns;
    slow += k.slow - was[k.statement].slow;
    if (d > most_ns) most = k.statement, most_ns = d;
  }
  EXPECT_EQ(most, "SELECT jobs");
  EXPECT_GE(most_ns, blocked * 9 / 10);
  EXPECT_EQ(slow, 1);
}

TEST(PostgresStore, AStatementIsNamedByItsVerbAndTable) {
  EXPECT_EQ(pg::statement_kind("INSERT INTO events(run_id, seq) VALUES (?, ?)"), "INSERT events");
  EXPECT_EQ(pg::statement_kind("  update \"agents\" SET x = ? WHERE id = ?"), "UPDATE agents");
  EXPECT_EQ(pg::statement_kind("DELETE FROM leases WHERE run_id = ?"), "DELETE leases");
  EXPECT_EQ(pg::statement_kind("SELECT count(*) FROM jobs j JOIN runs r ON r.job_id = j.id"), "SELECT jobs");
  EXPECT_EQ(pg::statement_kind("WITH w AS (SELECT id FROM runs WHERE x) UPDATE runs SET y = 1"), "WITH runs");
  EXPECT_EQ(pg::statement_kind("SELECT lastval()"), "SELECT lastval");
  EXPECT_EQ(pg::statement_kind("SELECT kfleet_lock_and_fence(?, ?)"), "SELECT kfleet_lock_and_fence");
  EXPECT_EQ(pg::statement_kind("COMMIT"), "COMMIT");
  EXPECT_EQ(pg::statement_kind(""), "");
}

// A scheduling pass's leases cost one round trip together, however many there are; a refused
// one costs one more, to say why.
TEST(PostgresStore, APassOfGrantsIsOneRoundTrip) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  const auto grants = grants_of_new_jobs(s, 5, {{"action", "assign"}});
  ASSERT_EQ(grants.size(), 5u);
  auto before = s.round_trips();
  auto r = s.grant_leases(grants, 30'000, 6);
  EXPECT_EQ(s.round_trips() - before, 1) << "five grants";
  ASSERT_EQ(r.size(), 5u);
  for (const auto& g : r) {
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ(g->job.state, JobState::leased);
  }
  EXPECT_EQ(s.running_runs().size(), 5u);
  // A job leased already: refused in the server, then explained from its rows.
  auto job = s.create_job(a_job("k"), 7);
  ASSERT_TRUE(job.ok());
  auto agent = s.enrol_agent(an_agent("b"), 7);
  ASSERT_TRUE(agent.ok());
  before = s.round_trips();
  auto again = s.grant_leases({grants[0], {job->id, agent->id, {}}}, 30'000, 8);
  EXPECT_EQ(s.round_trips() - before, 2) << "two grants, one refused";
  ASSERT_EQ(again.size(), 2u);
  ASSERT_FALSE(again[0].ok());
  EXPECT_EQ(again[0].error().code, Errc::conflict);
  EXPECT_NE(again[0].error().message.find("is leased, not pending"), std::string::npos)
      << again[0].error().message;
  ASSERT_TRUE(again[1].ok()) << again[1].error().message;
}

// The finishes the control plane gathers (those that arrive in one turn of its loop) are one
// round trip and one commit together, a refused one among them included.
TEST(PostgresStore, FinishesTogetherAreOneRoundTrip) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  const auto grants = grants_of_new_jobs(s, 6, {});
  ASSERT_EQ(grants.size(), 6u);
  auto leases = s.grant_leases(grants, 30'000, 4);
  std::vector<Store::FinishCall> calls;
  for (std::size_t i = 0; i < leases.size(); ++i) {
    ASSERT_TRUE(leases[i].ok()) << leases[i].error().message;
    Verdict v;
    v.outcome = RunOutcome::passed;
    calls.push_back({grants[i].agent_id, leases[i]->lease.run_id,
                     leases[i]->lease.fencing_token + (i == 2 ? 1 : 0), v});  // one stale
  }
  const auto before = s.round_trips();
  auto rs = s.finish_agent_runs(calls, 5);
  EXPECT_EQ(s.round_trips() - before, 1) << "six finishes, one refused";
  ASSERT_EQ(rs.size(), calls.size());
  for (std::size_t i = 0; i < rs.size(); ++i) {
    EXPECT_EQ(rs[i].ok(), i != 2) << i;
    EXPECT_EQ(s.get_job(grants[i].job_id)->state, i == 2 ? JobState::leased : JobState::passed);
  }
  EXPECT_EQ(rs[2].error().code, Errc::conflict);
}

// A pass's wait reasons (up to 256 state changes) cost two round trips together: the jobs read
// at once, then the writes with the COMMIT.
TEST(PostgresStore, ABatchOfStateChangesIsTwoRoundTrips) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  std::vector<Store::JobStateChange> changes;
  for (int i = 0; i < 40; ++i) {
    auto j = s.create_job(a_job("j" + std::to_string(i)), 2);
    ASSERT_TRUE(j.ok());
    changes.push_back({j->id, i % 2 ? JobState::waiting_capacity : JobState::queued,
                       "waiting for an idle L4 agent (" + std::to_string(i) + " busy, 0 idle)"});
  }
  const auto before = s.round_trips();
  auto rs = s.set_job_states(changes, 3);
  EXPECT_EQ(s.round_trips() - before, 2);
  ASSERT_EQ(rs.size(), changes.size());
  for (std::size_t i = 0; i < rs.size(); ++i) {
    ASSERT_TRUE(rs[i].ok()) << rs[i].error().message;
    EXPECT_EQ(rs[i]->state, changes[i].state);
    EXPECT_EQ(s.get_job(changes[i].id)->state_reason, changes[i].reason);
  }
}

// A user's submit is one call and one round trip: BEGIN, the lock and the fencing check, its
// checks' reads (the no-repeat map, the token's in-flight count), the statement that writes
// the bundle, the job, its origin and its event only if the checks allow it, and the COMMIT.
// A submission the checks answer (an identical job) or refuse (another body under the
// bundle's hash) costs the same one round trip and writes nothing. A submit with the lease
// planned for its job is one round trip too. What a pass reads of the fleet before it plans
// (agents, running runs, region blocks) is one round trip.
TEST(PostgresStore, ASubmitIsOneRoundTripAndAPassReadsTheFleetInOne) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  Submission sub;
  sub.job = a_job("j");
  sub.job.token_key = "tok";
  sub.job.bundle_hash = "sha256:b-j";
  sub.job.content_hash = "sha256:c-j";
  sub.bundle_body = "bundle bytes";
  sub.reuse_identical = true;
  sub.in_flight_limit = 5;
  auto before = s.round_trips();
  auto done = s.submit_job(sub, 2);
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(s.round_trips() - before, 1) << "a submit with its checks and its bundle";
  EXPECT_EQ(done->job.name, "j");
  EXPECT_FALSE(done->duplicate);
  EXPECT_EQ(s.get_bundle(sub.job.bundle_hash), sub.bundle_body);
  const auto events = s.events_after(0, 100).size();
  before = s.round_trips();
  auto dup = s.submit_job(sub, 3);
  ASSERT_TRUE(dup.ok()) << dup.error().message;
  EXPECT_EQ(s.round_trips() - before, 1) << "a submission an identical job answers";
  EXPECT_TRUE(dup->duplicate);
  EXPECT_EQ(dup->job.id, done->job.id);
  Submission clash = sub;
  clash.job = a_job("clash");
  clash.job.bundle_hash = sub.job.bundle_hash;
  clash.bundle_body = "other bytes";
  before = s.round_trips();
  auto refused = s.submit_job(clash, 3);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Errc::conflict) << refused.error().message;
  EXPECT_EQ(s.round_trips() - before, 1) << "a submission whose bundle clashes";
  EXPECT_EQ(s.events_after(0, 100).size(), events) << "neither wrote anything";
  EXPECT_EQ(s.get_bundle(sub.job.bundle_hash), sub.bundle_body);
  before = s.round_trips();
  ASSERT_TRUE(s.create_job(a_job("k"), 3).ok());
  EXPECT_EQ(s.round_trips() - before, 1) << "create_job: nothing to check first";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.enrol_agent(an_agent("a" + std::to_string(i)), 4).ok());
  // A submit with the lease planned for it: the same one round trip, the job leased.
  Submission leased = sub;
  leased.job = a_job("leased");
  leased.job.bundle_hash = sub.job.bundle_hash;
  leased.job.content_hash = "sha256:c-leased";
  leased.grant = Submission::Grant{s.list_agents().front().id, nullptr, 30'000};
  before = s.round_trips();
  auto granted = s.submit_job(leased, 4);
  ASSERT_TRUE(granted.ok()) << granted.error().message;
  EXPECT_EQ(s.round_trips() - before, 1) << "a submit and its lease";
  ASSERT_TRUE(granted->lease);
  EXPECT_EQ(granted->job.state, JobState::leased);
  // Behind a duplicate the grant finds no job, even with this session's last job pending.
  ASSERT_TRUE(s.set_job_state(granted->job.id, JobState::cancelled, "", 5).ok());
  ASSERT_TRUE(s.create_job(a_job("pending"), 5).ok());
  Submission again = sub;  // job j's again, which is still queued
  again.grant = Submission::Grant{s.list_agents().back().id, nullptr, 30'000};
  before = s.round_trips();
  auto dup_leased = s.submit_job(again, 5);
  ASSERT_TRUE(dup_leased.ok());
  EXPECT_TRUE(dup_leased->duplicate);
  EXPECT_FALSE(dup_leased->lease);
  EXPECT_EQ(s.round_trips() - before, 1);
  EXPECT_EQ(s.get_agent(s.list_agents().back().id)->current_run_id, 0);
  s.put_region_block({"terraform", "r1", "H100", "stockout", "none", 1, 5, 60'000});
  before = s.round_trips();
  auto v = s.fleet_view();
  EXPECT_EQ(s.round_trips() - before, 1) << "fleet_view";
  EXPECT_EQ(v.agents.size(), 3u);
  EXPECT_EQ(v.blocks.size(), 1u);
}

// Every statement of the store settles on its generic plan; a session takes it from the first
// execution on, not after five plans for the parameter values (PostgreSQL's default), which
// made the first uses of the grant, the finish and the long-poll after a start the slowest
// submit-to-lease samples of a run. A reconnected session too.
TEST(PostgresStore, ASessionPlansEachStatementOnceFromItsFirstExecution) {
  const std::string url = fresh_database();
  ASSERT_FALSE(url.empty());
  auto db = pg::Db::open(url, "kfleetd-plans-test");
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto plans = [&] {
    for (int i = 0; i < 3; ++i) {
      auto q = (*db)->prepare("SELECT count(*) FROM pg_class WHERE relname = ?");
      q.args(std::string("pg_class"));
      EXPECT_TRUE(q.step());
    }
    auto p = (*db)->prepare(
        "SELECT CASE WHEN custom_plans = 0 AND generic_plans >= 3 THEN 'generic only' ELSE "
        "generic_plans || ' generic, ' || custom_plans || ' custom' END FROM "
        "pg_prepared_statements WHERE statement LIKE '%FROM pg_class WHERE relname = $1'");
    return p.step() ? p.text(0) : std::string("not prepared");
  };
  EXPECT_EQ(plans(), "generic only");
  const std::string name = url.substr(url.find(":///") + 4, url.find('?') - url.find(":///") - 4);
  query_one(server()->url("postgres"),
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
                name + "' AND application_name = 'kfleetd-plans-test'");
  try {
    (void)plans();  // the dead connection shows when used
  } catch (const pg::DbError&) {
  }
  ASSERT_TRUE((*db)->ensure_connected());
  EXPECT_EQ(plans(), "generic only") << "after a reconnect";
}

// A submit whose pass runs right after it (the control plane asks for this when the pass is
// not paced): the fleet view comes back behind the submit's COMMIT, in its last round trip,
// and the pass's fleet_view() costs none. It is taken once, and only while nothing else has
// reached the server: an enrolment in between, or a write the server refused, makes the
// pass read the fleet again.
TEST(PostgresStore, TheFleetViewReadBehindASubmitsCommitCostsItsPassNoRoundTrip) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  const std::string& url = opened.url;
  ASSERT_TRUE(s.enrol_agent(an_agent("a0"), 1).ok());
  Submission sub;
  sub.job = a_job("j");
  sub.job.bundle_hash = "sha256:b-j";
  sub.bundle_body = "bundle bytes";
  sub.reuse_identical = true;
  s.read_fleet_view_with_next_commit();
  auto before = s.round_trips();
  ASSERT_TRUE(s.submit_job(sub, 2).ok());
  EXPECT_EQ(s.round_trips() - before, 1) << "the reads ride on the submit's round trip";
  before = s.round_trips();
  auto v = s.fleet_view();
  EXPECT_EQ(s.round_trips() - before, 0);
  ASSERT_EQ(v.agents.size(), 1u);
  EXPECT_EQ(v.agents[0].name, "a0");
  before = s.round_trips();
  EXPECT_EQ(s.fleet_view().agents.size(), 1u);
  EXPECT_EQ(s.round_trips() - before, 1) << "taken once: the next pass reads again";

  // An enrolment between the submit and its pass: the pass sees the new agent.
  sub.job = a_job("k");
  sub.job.bundle_hash = "sha256:b-j";
  s.read_fleet_view_with_next_commit();
  auto second = s.submit_job(sub, 3);
  ASSERT_TRUE(second.ok()) << second.error().message;
  ASSERT_TRUE(s.enrol_agent(an_agent("a1"), 4).ok());
  before = s.round_trips();
  EXPECT_EQ(s.fleet_view().agents.size(), 2u);
  EXPECT_EQ(s.round_trips() - before, 1);

  // Deposed: the fencing check fails in the server, the reads behind the COMMIT never run,
  // and the fleet is read again.
  query_one(url, "UPDATE kfleet_leader SET epoch = epoch + 1");
  s.read_fleet_view_with_next_commit();
  auto refused = s.create_job(a_job("l"), 5);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("no longer the leader"), std::string::npos)
      << refused.error().message;
  before = s.round_trips();
  EXPECT_EQ(s.fleet_view().agents.size(), 2u);
  EXPECT_EQ(s.round_trips() - before, 1);
}

// A deposed leader's writes that wait in the queue for the next round trip (renew_lease's,
// touch_agent's) fail in the server at the fencing check, and nothing of them is written.
TEST(PostgresStore, ADeposedLeadersQueuedWritesAreRefusedInTheServer) {
  auto opened = open_as_leader();
  ASSERT_TRUE(opened.store);
  Store& s = *opened.store;
  const std::string& url = opened.url;
  auto job = s.create_job(a_job("j"), 2);
  auto agent = s.enrol_agent(an_agent("a"), 3);
  ASSERT_TRUE(job.ok() && agent.ok());
  auto lease = s.grant_lease(job->id, agent->id, 30'000, 4);
  ASSERT_TRUE(lease.ok());
  // Another kfleetd takes over: the epoch moves on under the old leader's feet.
  query_one(url, "UPDATE kfleet_leader SET epoch = epoch + 1");

  auto renew = s.renew_lease(lease->run_id, lease->fencing_token, 30'000, 5'000);
  ASSERT_FALSE(renew.ok());
  EXPECT_EQ(renew.error().code, Errc::unavailable);
  EXPECT_NE(renew.error().message.find("no longer the leader"), std::string::npos)
      << renew.error().message;
  auto touch = s.touch_agent(agent->id, 6'000);
  ASSERT_FALSE(touch.ok());
  EXPECT_NE(touch.error().message.find("no longer the leader"), std::string::npos);
  EXPECT_EQ(query_one(url, "SELECT lease_expires_ms FROM runs WHERE id = " +
                               std::to_string(lease->run_id)),
            std::to_string(4 + 30'000));
  EXPECT_EQ(query_one(url, "SELECT last_seen_ms FROM agents WHERE id = " +
                               std::to_string(agent->id)),
            "4");
}

}  // namespace
}  // namespace kfleet::store::testing
