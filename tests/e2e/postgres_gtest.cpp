// kfleetd on PostgreSQL end to end: a scratch server (initdb + postgres on a unix socket in a
// temporary directory), kfleetd with --db postgresql://..., simulated agents. Jobs run to their
// verdicts, everything lands in the database, and a kfleetd killed with -9 comes back on the
// same database with every job and event, and goes on scheduling.
#include <libpq-fe.h>

#include <gtest/gtest.h>

#include "cluster.hpp"
#include "pg_sql.hpp"
#include "kfleet/store/pg_scratch.hpp"

namespace kfleet::e2e {
namespace {

TEST(PostgresE2E, JobsRunThroughKfleetdOnPostgresAndSurviveAKill9) {
  auto server = store::ScratchPostgres::start();
  ASSERT_TRUE(server.ok()) << server.error().message;
  auto url = (*server)->create_database("kfleet");
  ASSERT_TRUE(url.ok()) << url.error().message;

  ClusterOptions o;
  o.db_url = *url;
  Cluster c(o);
  c.start_kfleetd();
  EXPECT_NE(c.kfleetd().log().find("store postgresql:///kfleet"), std::string::npos)
      << c.kfleetd().log();
  c.start_agent("a1");
  c.start_agent("a2");
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 4; ++i) {
    const std::string name = "pg/j" + std::to_string(i);
    ids.push_back(c.submit_api(c.write_job("j" + std::to_string(i), Cluster::sim_job_yaml(name))));
  }
  for (auto id : ids) {
    auto j = c.wait_terminal(id);
    EXPECT_EQ(j["job"]["state"], "passed") << j.dump() << c.logs();
  }

  // It is all in PostgreSQL: the jobs, their runs, and gap-free event ids.
  auto jobs = pg_sql(*url, "SELECT count(*) FROM jobs WHERE state = 'passed'");
  EXPECT_EQ(jobs[0][0], "4");
  auto runs = pg_sql(*url, "SELECT count(*), count(DISTINCT job_id) FROM runs "
                           "WHERE outcome = 'passed' AND simulated = 1");
  EXPECT_EQ(runs[0][0], "4");
  EXPECT_EQ(runs[0][1], "4");
  auto ev = pg_sql(*url, "SELECT count(*), max(id), (SELECT value FROM counters WHERE name = "
                         "'event_id') FROM events");
  EXPECT_EQ(ev[0][0], ev[0][1]) << "event ids must be 1..N";
  EXPECT_EQ(ev[0][1], ev[0][2]);
  auto verdicts = pg_sql(*url, "SELECT count(*) FROM events WHERE type = 'verdict'");
  EXPECT_EQ(verdicts[0][0], "4");

  // kill -9 and a restart on the same database: everything is still there, and new work runs.
  const auto events_before = c.job_events(ids[0]).size();
  c.kill_kfleetd();
  c.start_kfleetd();
  EXPECT_EQ(c.job(ids[0])["job"]["state"], "passed");
  EXPECT_EQ(c.job_events(ids[0]).size(), events_before);
  const auto late = c.submit_api(c.write_job("late", Cluster::sim_job_yaml("pg/late")));
  auto j = c.wait_terminal(late);
  EXPECT_EQ(j["job"]["state"], "passed") << j.dump() << c.logs();
  auto all = pg_sql(*url, "SELECT count(*), max(id) FROM events");
  EXPECT_EQ(all[0][0], all[0][1]) << "event ids stay 1..N across the restart";
}

TEST(PostgresE2E, AnUnreachableDatabaseIsAClearStartError) {
  auto r = run_cmd({KFLEETD_BIN, "--listen", "127.0.0.1:0", "--db",
                    "postgresql://kfleet:s3cret@/kfleet?host=/nonexistent-kfleet-pg"},
                   20000);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cannot connect to PostgreSQL"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("s3cret"), std::string::npos) << "the password must not be printed";
}

}  // namespace
}  // namespace kfleet::e2e
