// Chaos: kfleetd killed -9 again and again (and restarted on the same SQLite file) while agents
// fetch bundles and upload events. An outage of kfleetd is the fleet's failure, never the
// job's: every job must end `passed`, whatever call the kill cut (agent/README.md, "Whose
// failure is it").
#include <gtest/gtest.h>

#include <set>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

bool is_terminal(const std::string& s) {
  return s == "passed" || s == "rejected" || s == "error" || s == "cancelled";
}

TEST(Chaos, KfleetdKilledDuringFetchesAndUploadsEndsEveryJobPassed) {
  constexpr int kJobs = 40;
  constexpr int kKills = 12;
  Cluster c;
  c.start_kfleetd();
  // Bundles big enough that a fetch takes a while, so kills land in the middle of fetches.
  std::string filler;
  while (filler.size() < 256 * 1024) filler += "// padding so the bundle fetch takes a while\n";
  std::vector<std::int64_t> ids;
  for (int i = 0; i < kJobs; ++i) {
    const std::string name = "chaos/" + std::to_string(i);
    // A lease whose answer a kill cut costs an attempt (it lapses: lost -> requeued); 5, as
    // in the storm that found the fetch failure.
    auto path = c.write_job("j" + std::to_string(i),
                            Cluster::sim_job_yaml(name, "L4", "", 25, 100, "max_attempts: 5\n"));
    write_file(c.dir() + "/jobs/j" + std::to_string(i) + "/k.cu",
               "// " + name + "\n__global__ void k(float* o) { o[threadIdx.x] = 1.f; }\n" + filler);
    ids.push_back(c.submit_api(path));
    ASSERT_GT(ids.back(), 0);
  }
  for (int a = 0; a < 4; ++a) c.start_agent("a" + std::to_string(a));

  // Each kill is aimed at a fresh lease: a run newer than the last kill whose job is still
  // `leased` is one whose agent has just been given it and is fetching its bundle (its first
  // events are not in yet). A lease whose answer a kill cut stays `leased` until it lapses:
  // it is older, so it does not count.
  int kills = 0, aimed = 0;
  std::string newest_run = "0";
  const std::string pending_q =
      "SELECT count(*) FROM jobs WHERE state NOT IN ('passed', 'rejected', 'error', 'cancelled')";
  for (int k = 0; k < kKills; ++k) {
    if (c.sql(pending_q)[0][0] == "0") break;
    const bool fresh = wait_until(
        [&] {
          return c.sql("SELECT count(*) FROM runs r JOIN jobs j ON j.current_run_id = r.id "
                       "WHERE j.state = 'leased' AND r.id > " + newest_run)[0][0] != "0";
        },
        std::chrono::seconds(10), std::chrono::milliseconds(2));
    aimed += fresh ? 1 : 0;
    c.kill_kfleetd();
    ++kills;
    newest_run = c.sql("SELECT coalesce(max(id), 0) FROM runs")[0][0];
    c.start_kfleetd();
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GE(kills, kKills / 2) << "the jobs ended before the storm did: too few kills to mean anything";

  for (auto id : ids) {
    auto j = c.wait_terminal(id, 90000);
    ASSERT_TRUE(is_terminal(j["job"]["state"].get<std::string>()));
    EXPECT_EQ(j["job"]["state"], "passed")
        << "job " << id << ": " << j["job"]["state_reason"] << "\n" << c.logs();
  }
  // No run was ended as an error by an agent: outages give the run back, never a verdict.
  auto errors = c.sql("SELECT count(*) FROM runs WHERE outcome = 'error'");
  EXPECT_EQ(errors[0][0], "0");
  // Every run's events: no duplicates and no gaps (seq 1..n, all present).
  auto rows = c.sql("SELECT run_id, count(*), count(DISTINCT seq), min(seq), max(seq) FROM events "
                    "WHERE run_id > 0 GROUP BY run_id");
  for (const auto& r : rows) {
    EXPECT_EQ(r[1], r[2]) << "duplicates in run " << r[0];
    EXPECT_EQ(r[3], "1") << "run " << r[0];
    EXPECT_EQ(r[4], r[1]) << "gap in run " << r[0];
  }
  // What the kills cut, as the agents saw it.
  int cut_fetches = 0, cut_uploads = 0;
  for (int a = 0; a < 4; ++a) {
    const std::string log = read_file(c.dir() + "/agent-a" + std::to_string(a) + ".log");
    for (std::size_t p = 0; (p = log.find("cannot fetch bundle", p)) != std::string::npos; ++p)
      ++cut_fetches;
    for (std::size_t p = 0; (p = log.find("event upload failed", p)) != std::string::npos; ++p)
      ++cut_uploads;
  }
  auto lost = c.sql("SELECT count(*), coalesce(max(attempt), 0) FROM runs WHERE outcome = 'lost'");
  auto most = c.sql("SELECT max(attempts) FROM jobs");
  std::printf("chaos: %d kills of kfleetd (%d aimed at a fresh lease); the agents saw %d bundle "
              "fetches and %d event uploads fail; %s runs lost (requeued), most attempts of a "
              "job: %s\n",
              kills, aimed, cut_fetches, cut_uploads, lost[0][0].c_str(), most[0][0].c_str());
  EXPECT_GE(cut_fetches, 1) << "no kill landed in a bundle fetch: the storm missed what it is for";
  // No agent ever held two runs at once (one running run per agent at the end: none).
  auto running = c.sql("SELECT count(*) FROM runs WHERE outcome = 'running'");
  EXPECT_EQ(running[0][0], "0");
}

}  // namespace
}  // namespace kfleet::e2e
