// The core loop end to end: the CLI submits, kfleetd schedules, a real agent process runs the
// stages on the simulated GPU backend, and everything lands in the SQLite file.
#include <algorithm>

#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(CoreLoop, CliSubmitRunsEndToEndIntoSqlite) {
  Cluster c;
  c.start_kfleetd();
  c.start_agent("a1");
  const std::string yaml = c.write_job("j1", Cluster::sim_job_yaml("demo/j1"));
  auto r = c.cli({"submit", yaml, "--follow"});
  EXPECT_EQ(r.exit_code, 0) << r.output << c.logs();
  EXPECT_NE(lower(r.output).find("passed"), std::string::npos) << r.output;
  EXPECT_NE(lower(r.output).find("simulated"), std::string::npos) << r.output;

  // The verdict and the events are in the SQLite file itself.
  const std::string job = c.the_passed_simulated_job();
  ASSERT_FALSE(job.empty());
  auto stages = c.sql("SELECT DISTINCT json_extract(data, '$.stage') FROM events WHERE type = "
                      "'stage.finished' AND job_id = " + job);
  std::vector<std::string> names;
  for (auto& s : stages) names.push_back(s[0]);
  for (const char* want : {"fetch", "build", "resources", "correctness", "benchmark"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  auto verdict = c.sql("SELECT count(*) FROM events WHERE type = 'verdict' AND job_id = " + job);
  EXPECT_EQ(verdict[0][0], "1");
  // `kfleet results` shows it, marked simulated.
  auto res = c.cli({"results"});
  EXPECT_EQ(res.exit_code, 0) << res.output;
  EXPECT_NE(res.output.find("demo/j1"), std::string::npos) << res.output;
  EXPECT_NE(lower(res.output).find("simulated"), std::string::npos) << res.output;
}

TEST(CoreLoop, TwoJobsOnOneAgentRunOneAfterTheOther) {
  Cluster c;
  c.start_kfleetd();
  const auto j1 = c.submit_api(c.write_job("a", Cluster::sim_job_yaml("seq/a", "L4", "", 60)));
  const auto j2 = c.submit_api(c.write_job("b", Cluster::sim_job_yaml("seq/b", "L4", "", 60)));
  c.start_agent("only");
  auto r1 = c.wait_terminal(j1);
  auto r2 = c.wait_terminal(j2);
  EXPECT_EQ(r1["job"]["state"], "passed");
  EXPECT_EQ(r2["job"]["state"], "passed");
  EXPECT_EQ(r1["runs"][0]["agent_id"], r2["runs"][0]["agent_id"]);
  // Each job's life on the agent (lease.granted .. its last event) is an interval of global
  // event ids; the two intervals must not overlap.
  auto span = [&](std::int64_t job) {
    std::int64_t lo = INT64_MAX, hi = 0;
    for (const auto& e : c.job_events(job)) {
      if (e["type"] == "lease.granted") lo = std::min<std::int64_t>(lo, e["id"]);
      if (e["run_id"].get<std::int64_t>() != 0 || e["type"] == "job.state")
        hi = std::max<std::int64_t>(hi, e["id"]);
    }
    return std::pair{lo, hi};
  };
  auto [a0, a1] = span(j1);
  auto [b0, b1] = span(j2);
  ASSERT_LT(a0, INT64_MAX);
  ASSERT_LT(b0, INT64_MAX);
  EXPECT_TRUE(a1 < b0 || b1 < a0) << "job " << j1 << " [" << a0 << "," << a1 << "] overlaps job "
                                  << j2 << " [" << b0 << "," << b1 << "]";
}

}  // namespace
}  // namespace kfleet::e2e
