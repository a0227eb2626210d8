// A queue far longer than the fleet: a scheduling pass plans only the first jobs of each class
// of interchangeable jobs, so these check what must still hold for the rest of the queue. Jobs
// are leased in priority order, every queued job carries its wait reason (the deep ones too),
// and a reason that changes reaches every job of the class.
#include <gtest/gtest.h>

#include <algorithm>

#include <chrono>

#include "plane.hpp"

namespace kfleet::core {
namespace {

struct QueuePlane : test::Plane {
  // Runs queued passes (and the passes they ask for) until there is nothing left to do.
  void settle() { test::Plane::settle(std::chrono::seconds(20)); }

  std::int64_t enrol(const std::string& name, const std::string& gpu) {
    return enrol_agent(name, gpu, /*simulated=*/true).agent_id;
  }

  std::int64_t submit(const std::string& name, const std::string& gpu, int priority) {
    return test::Plane::submit("name: " + name + "\npriority: " + std::to_string(priority) +
                               "\ntarget: {gpu: " + gpu +
                               "}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n");
  }

  // One long-poll; the job it leased (0 when none), finished at once.
  std::int64_t take(std::int64_t agent) {
    auto got = wait_offer(agent);
    if (!got) return 0;
    Verdict v;
    v.outcome = RunOutcome::passed;
    v.simulated = true;
    EXPECT_TRUE(cp->finish(agent, got->lease.run_id, got->lease.fencing_token, v).ok());
    return got->lease.job_id;
  }

  // How many of the jobs are pending with a reason starting with `prefix`.
  int with_reason(const std::vector<std::int64_t>& jobs, const std::string& prefix) {
    int n = 0;
    for (auto id : jobs) {
      auto j = st->get_job(id);
      if (j && (j->state == JobState::queued || j->state == JobState::waiting_capacity) &&
          j->state_reason.rfind(prefix, 0) == 0)
        ++n;
    }
    return n;
  }
};

TEST(LongQueue, DeepJobsCarryTheirReasonAndLeasesFollowPriority) {
  QueuePlane p;
  const auto l4_agent = p.enrol("l4", "L4");
  // Far more jobs than one agent's pass looks at (two per class), in two classes.
  std::vector<std::int64_t> l4, h100;
  std::vector<std::pair<int, std::int64_t>> expect;  // (-priority, id): the order leases follow
  for (int i = 0; i < 600; ++i) {
    const int prio = (i * 7) % 3;
    if (i % 2) {
      l4.push_back(p.submit("l4-" + std::to_string(i), "L4", prio));
      expect.emplace_back(-prio, l4.back());
    } else {
      h100.push_back(p.submit("h100-" + std::to_string(i), "H100", prio));
    }
  }
  p.settle();
  // The L4 agent is enrolled but not asking: every L4 job waits for it; no agent serves H100.
  EXPECT_EQ(p.with_reason(l4, "waiting for an idle L4 agent"), 300);
  EXPECT_EQ(p.with_reason(h100, "no agent serves gpu 'H100'"), 300);

  std::sort(expect.begin(), expect.end());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(p.take(l4_agent), expect[static_cast<std::size_t>(i)].second) << i;

  // The first H100 agent changes the reason of every H100 job, the deepest included.
  const auto h100_agent = p.enrol("h100", "H100");
  const auto first = p.take(h100_agent);
  EXPECT_NE(first, 0);
  p.settle();
  EXPECT_EQ(p.with_reason(h100, "waiting for an idle H100 agent"), 299);
  EXPECT_EQ(p.with_reason(h100, "no agent serves"), 0);
}

// A job submitted while an agent for it waits is leased in the submit's own store
// transaction (one round trip on PostgreSQL): the job is leased when submit() returns, before
// any pass ran, and the waiting agent's long-poll answers with it. A job that agent cannot
// take stays queued for the passes.
TEST(LongQueue, ASubmitToAWaitingAgentIsLeasedInItsOwnTransaction) {
  QueuePlane p;
  const auto agent = p.enrol("l4", "L4");
  auto poll = p.start_poll(agent);  // it waits: the pass it asked for found nothing to do
  ASSERT_FALSE(poll->done);

  const auto h100 = p.submit("h100", "H100", 5);
  EXPECT_EQ(p.st->get_job(h100)->state, JobState::queued) << "no waiting agent serves H100";
  p.io.poll();
  ASSERT_FALSE(poll->done);
  const auto job = p.submit("l4", "L4", 0);
  auto stored = p.st->get_job(job);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->state, JobState::leased) << "leased before any pass ran";
  auto events = p.st->job_events(job, 0, 10);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1].type, event_type::sched_decision);
  EXPECT_EQ(events[1].data["action"], "assign");
  EXPECT_EQ(events[1].data["agent_id"], agent);
  EXPECT_EQ(events[2].type, event_type::lease_granted);
  auto got = p.finish_poll(*poll, std::chrono::seconds(10));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->lease.job_id, job);
  EXPECT_EQ(got->lease.run_id, stored->current_run_id);
  EXPECT_EQ(p.st->get_job(h100)->state, JobState::queued);
}

}  // namespace
}  // namespace kfleet::core
