// Revoking an agent (what to do with a stolen agent token): an admin retires it, its next call
// gets 401, and the job it held goes back to the queue at once, to be run by another agent.
#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

TEST(RevokeAgent, ARetiredAgentsNextCallGets401AndItsLeaseIsRequeued) {
  Cluster c;
  c.start_kfleetd();
  // A test-driven agent (the holder of a stolen token, say) takes the job and holds it.
  auto e = c.enrol_raw_agent("stolen");
  const std::string agent_path = "/api/v1/agents/" + std::to_string(e["agent_id"].get<int>());
  HttpClient stolen(c.url(), e["token"].get<std::string>());
  const auto job = c.submit_api(c.write_job("r", Cluster::sim_job_yaml("revoke/held", "L4", "", 300)));
  auto l = stolen.post_json(agent_path + "/lease?wait_ms=5000", nlohmann::json::object());
  ASSERT_EQ(l->status, 200) << l->body;
  const auto lease = (*l->json())["lease"];
  ASSERT_EQ(lease["job_id"].get<std::int64_t>(), job) << lease.dump();
  EXPECT_EQ(stolen.post_json(agent_path + "/heartbeat",
                             {{"run_id", lease["run_id"]}, {"fencing_token", lease["fencing_token"]}})
                ->status,
            200);

  HttpClient admin(c.url(), Cluster::kUserToken);
  auto r = admin.post_json(agent_path + "/retire", nlohmann::json::object());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ((*r->json())["agent"]["state"], "retired");

  // Its next call, whatever it is, is refused; the job is queued again without waiting for the
  // lease to expire.
  EXPECT_EQ(stolen.post_json(agent_path + "/heartbeat",
                             {{"run_id", lease["run_id"]}, {"fencing_token", lease["fencing_token"]}})
                ->status,
            401);
  const std::string fin_path = "/api/v1/runs/" + std::to_string(lease["run_id"].get<int>()) + "/finish";
  EXPECT_EQ(stolen.post_json(fin_path, {{"fencing_token", lease["fencing_token"]},
                                        {"verdict", {{"outcome", "passed"}}}})->status,
            401);
  auto now = c.job(job);
  EXPECT_EQ(now["job"]["state"], "queued") << now.dump(2);
  ASSERT_EQ(now["runs"].size(), 1u) << now.dump(2);
  EXPECT_EQ(now["runs"][0]["outcome"], "lost");

  // Another agent runs it to the end.
  c.start_agent("honest");
  auto done = c.wait_terminal(job);
  EXPECT_EQ(done["job"]["state"], "passed") << c.logs();
  ASSERT_EQ(done["runs"].size(), 2u);
  EXPECT_NE(done["runs"][0]["agent_id"], done["runs"][1]["agent_id"]);
}

}  // namespace
}  // namespace kfleet::e2e
