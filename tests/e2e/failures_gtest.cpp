// Failure: an agent killed mid-run, a dead agent's late results, and kfleetd itself killed
// mid-run and restarted on the same SQLite file.
#include <thread>

#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

bool is_running(const nlohmann::json& job) {
  const std::string s = job["state"];
  return s == "building" || s == "gating" || s == "benchmarking";
}

TEST(Failures, AgentKilledMidRunIsRequeuedAndItsLateResultsRefused) {
  Cluster c;
  c.start_kfleetd();
  // A test-driven agent takes the first job and then goes silent, like a partitioned host.
  auto e = c.enrol_raw_agent("ghost");
  HttpClient ghost(c.url(), e["token"].get<std::string>());
  const auto j1 = c.submit_api(c.write_job("g", Cluster::sim_job_yaml("fail/ghost", "L4", "", 300)));
  auto l = ghost.post_json("/api/v1/agents/" + std::to_string(e["agent_id"].get<int>()) +
                               "/lease?wait_ms=5000", nlohmann::json::object());
  ASSERT_EQ(l->status, 200) << l->body;
  const auto lease = (*l->json())["lease"];
  const std::string ev_path = "/api/v1/runs/" + std::to_string(lease["run_id"].get<int>()) + "/events";
  nlohmann::json first = {{"fencing_token", lease["fencing_token"]},
                          {"events", {{{"seq", 1}, {"type", "stage.started"}, {"data", {{"stage", "fetch"}}}}}}};
  ASSERT_EQ(ghost.post_json(ev_path, first)->status, 200);

  // A real agent process takes it over once the ghost's lease expires.
  Proc& a1 = c.start_agent("a1");
  auto done1 = c.wait_terminal(j1);
  EXPECT_EQ(done1["job"]["state"], "passed");
  ASSERT_EQ(done1["runs"].size(), 2u);
  EXPECT_EQ(done1["runs"][0]["outcome"], "lost");
  EXPECT_EQ(done1["runs"][1]["outcome"], "passed");

  // The ghost comes back with late results: refused, and the stored result is unchanged.
  nlohmann::json late = {{"fencing_token", lease["fencing_token"]},
                         {"events", {{{"seq", 2}, {"type", "stage.started"}, {"data", {{"stage", "build"}}}}}}};
  EXPECT_EQ(ghost.post_json(ev_path, late)->status, 409);
  auto fin = ghost.post_json("/api/v1/runs/" + std::to_string(lease["run_id"].get<int>()) + "/finish",
                             {{"fencing_token", lease["fencing_token"]},
                              {"verdict", {{"outcome", "rejected"}, {"gate", "correctness"}}}});
  EXPECT_EQ(fin->status, 409) << fin->body;
  EXPECT_EQ(c.job(j1)["job"]["state"], "passed");

  // The real agent is killed -9 in the middle of the next job.
  const auto j2 = c.submit_api(c.write_job("k", Cluster::sim_job_yaml("fail/killed", "L4", "", 400)));
  nlohmann::json seen;
  ASSERT_TRUE(wait_until([&] { return is_running((seen = c.job(j2))["job"]); }, std::chrono::seconds(30)))
      << seen.dump(2) << c.logs();
  a1.kill9();
  c.start_agent("a2");
  auto done2 = c.wait_terminal(j2, 60000);
  EXPECT_EQ(done2["job"]["state"], "passed") << c.logs();
  ASSERT_EQ(done2["runs"].size(), 2u);
  EXPECT_EQ(done2["runs"][0]["outcome"], "lost");
  EXPECT_NE(done2["runs"][0]["agent_id"], done2["runs"][1]["agent_id"]);
}

TEST(Failures, KfleetdKilledMidRunLosesNothing) {
  Cluster c;
  c.start_kfleetd();
  c.start_agent("a1");
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(c.submit_api(c.write_job("r" + std::to_string(i),
                                           Cluster::sim_job_yaml("restart/" + std::to_string(i), "L4", "", 250))));
  ASSERT_TRUE(wait_until([&] { return is_running(c.job(ids[0])["job"]); }, std::chrono::seconds(30)));
  c.kill_kfleetd();
  // The agent keeps running its job and spools the events it cannot upload.
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // downtime, not synchronisation
  c.start_kfleetd();
  for (auto id : ids) {
    auto j = c.wait_terminal(id, 90000);
    EXPECT_EQ(j["job"]["state"], "passed") << c.logs();
  }
  // Every run's events: no duplicates and no gaps (seq 1..n, all present).
  auto rows = c.sql("SELECT run_id, count(*), count(DISTINCT seq), min(seq), max(seq) FROM events "
                    "WHERE run_id > 0 GROUP BY run_id");
  ASSERT_GE(rows.size(), 3u);
  for (const auto& r : rows) {
    EXPECT_EQ(r[1], r[2]) << "duplicates in run " << r[0];
    EXPECT_EQ(r[3], "1") << "run " << r[0];
    EXPECT_EQ(r[4], r[1]) << "gap in run " << r[0];
  }
  // Jobs queued at the crash were not lost: all three exist, each with one passed run.
  auto jobs = c.sql("SELECT count(*) FROM jobs WHERE state = 'passed'");
  EXPECT_EQ(jobs[0][0], "3");
}

}  // namespace
}  // namespace kfleet::e2e
