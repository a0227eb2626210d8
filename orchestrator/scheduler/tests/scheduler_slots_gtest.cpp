// plan() on multi-GPU hosts: one job per GPU slot, host-exclusive jobs alone on their host.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "scheduler_fixtures.hpp"

namespace kfleet::sched {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace)

// An 8-GPU L4 host: agents 1..8 serve slots 0..7 of `host`.
std::vector<AgentSlot> eight_gpu_host(const std::string& host, std::int64_t first_id = 1,
                                      bool idle = true) {
  std::vector<AgentSlot> out;
  for (int i = 0; i < 8; ++i) {
    AgentSlot a = l4(first_id + i, "r", idle);
    a.host = host;
    a.slot = i;
    out.push_back(a);
  }
  return out;
}

PendingJob exclusive(std::int64_t id, int priority = 0) {
  PendingJob j = job(id, "L4", {}, priority);
  j.host_exclusive = true;
  return j;
}

TEST(PlanSlots, EightJobsFillEightSlotsOfOneHost) {
  Snapshot s;
  for (int i = 1; i <= 9; ++i) s.queue.push_back(job(i, "L4"));
  s.agents = eight_gpu_host("h");
  const Plan p = plan(s);
  ASSERT_EQ(p.assign.size(), 8u);
  std::set<std::int64_t> agents;
  for (const auto& a : p.assign) agents.insert(a.agent_id);
  EXPECT_EQ(agents.size(), 8u) << "a slot was given two jobs";
  EXPECT_NE(p.assign[0].reason.find("GPU 0 of host h"), std::string::npos) << p.assign[0].reason;
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_EQ(p.wait[0].job_id, 9);
}

TEST(PlanSlots, ASlotWhoseLeaseIsStillHeldIsNotGivenAJob) {
  // A restarted agent polls for slot 3 while the old agent's run on slot 3 is not yet expired.
  Snapshot s;
  s.queue = {job(1, "L4")};
  AgentSlot restarted = l4(20, "r");
  restarted.host = "h";
  restarted.slot = 3;
  s.agents = {restarted};
  s.running = {{"h", 3, false}};
  const Plan p = plan(s);
  EXPECT_TRUE(p.assign.empty());
}

TEST(PlanSlots, HostExclusiveJobTakesAnEmptyHost) {
  Snapshot s;
  s.queue = {exclusive(1), job(2, "L4")};
  s.agents = eight_gpu_host("h");
  const Plan p = plan(s);
  ASSERT_EQ(p.assign.size(), 1u) << "a job was placed beside a host-exclusive one";
  EXPECT_EQ(p.assign[0].job_id, 1);
  EXPECT_NE(p.assign[0].reason.find("host-exclusive"), std::string::npos);
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_EQ(p.wait[0].job_id, 2);
  EXPECT_EQ(p.wait[0].waits_for, "host");
  EXPECT_EQ(p.wait[0].host, "h");
}

TEST(PlanSlots, HostExclusiveJobWaitsForItsHostToDrainAndHoldsItMeanwhile) {
  Snapshot s;
  s.queue = {exclusive(1, 5), job(2, "L4"), job(3, "L4")};
  s.agents = eight_gpu_host("h");
  for (int i = 0; i < 6; ++i) {  // six slots busy, two idle
    s.agents[static_cast<std::size_t>(i)].idle = false;
    s.running.push_back({"h", i, false});
  }
  const Plan p = plan(s);
  EXPECT_TRUE(p.assign.empty()) << "the draining host took another job";
  ASSERT_EQ(p.wait.size(), 3u);
  EXPECT_EQ(p.wait[0].job_id, 1);
  EXPECT_EQ(p.wait[0].waits_for, "host");
  EXPECT_EQ(p.wait[0].reason, "host-exclusive: waiting for host h to drain (6 of its GPUs busy)");
  EXPECT_EQ(p.wait[1].waits_for, "host");
  EXPECT_NE(p.wait[1].reason.find("draining for a host-exclusive job"), std::string::npos);
}

TEST(PlanSlots, JobsBehindAnExclusiveOneUseOtherHosts) {
  Snapshot s;
  s.queue = {exclusive(1, 5), job(2, "L4")};
  s.agents = eight_gpu_host("h");
  s.agents[0].idle = false;
  s.running = {{"h", 0, false}};
  auto other = eight_gpu_host("g", 100);
  other[0].idle = false;
  other[1].idle = false;
  s.running.push_back({"g", 0, false});
  s.running.push_back({"g", 1, false});
  s.agents.insert(s.agents.end(), other.begin(), other.end());
  const Plan p = plan(s);
  // Job 1 reserves h (the least busy); job 2 runs on g.
  ASSERT_EQ(p.assign.size(), 1u);
  EXPECT_EQ(p.assign[0].job_id, 2);
  EXPECT_GE(p.assign[0].agent_id, 100);
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_EQ(p.wait[0].host, "h");
}

TEST(PlanSlots, NothingJoinsAHostThatRunsAnExclusiveJob) {
  Snapshot s;
  s.queue = {job(1, "L4"), exclusive(2)};
  s.agents = eight_gpu_host("h");
  s.agents[4].idle = false;
  s.running = {{"h", 4, true}};
  const Plan p = plan(s);
  EXPECT_TRUE(p.assign.empty());
  ASSERT_EQ(p.wait.size(), 2u);
  EXPECT_NE(p.wait[0].reason.find("runs a host-exclusive job"), std::string::npos) << p.wait[0].reason;
}

TEST(PlanSlots, AgentsWithoutAHostAreHostsOfTheirOwn) {
  Snapshot s;
  s.queue = {exclusive(1), exclusive(2)};
  s.agents = {l4(1, "r"), l4(2, "r")};
  const Plan p = plan(s);
  EXPECT_EQ(p.assign.size(), 2u);
}

}  // namespace
}  // namespace kfleet::sched
