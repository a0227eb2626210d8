// The store contract: how a run ends other than with its verdict: its lease expired (a run that
// never started gives its attempt back), its job cancelled, or handed from a compile agent to a
// GPU agent.
#include "store_contract.hpp"

namespace kfleet::store::testing {
namespace {

// The data of the job's one event of `type`; a test failure when it has none or several.
nlohmann::json only_event(Store& s, std::int64_t job_id, const std::string& type) {
  std::vector<nlohmann::json> found;
  for (const auto& e : s.job_events(job_id, 0, 100))
    if (e.type == type) found.push_back(e.data);
  EXPECT_EQ(found.size(), 1u) << "events of type " << type;
  return found.empty() ? nlohmann::json::object() : found.front();
}

}  // namespace

TEST_P(StoreContract, ExpiredLeasesRequeueUntilAttemptsRunOut) {
  auto j = create("j", 0, 2);
  auto a = enrol("a");
  auto b = enrol("b");
  auto l1 = lease(j.id, a.id, 10'000);
  // The run started (an event under it): its loss uses up the attempt.
  ASSERT_TRUE(store().append_run_events(l1.run_id, l1.fencing_token, {ev(1)}, ++now_).ok());
  EXPECT_TRUE(store().expired_runs(now_ + 9'000).empty());
  auto due = store().expired_runs(now_ + 10'000);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].id, l1.run_id);

  auto r = store().expire_run(l1.run_id, "silent for 30 s", ++now_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->state, JobState::queued);
  EXPECT_EQ(r->current_run_id, 0);
  EXPECT_NE(r->state_reason.find("agent " + std::to_string(a.id) +
                                 " lost (lease expired); requeued, attempt 2 of 2"),
            std::string::npos)
      << r->state_reason;
  EXPECT_EQ(store().get_run(l1.run_id)->outcome, RunOutcome::lost);
  EXPECT_EQ(store().get_agent(a.id)->state, AgentState::lost);
  EXPECT_EQ(store().get_agent(a.id)->current_run_id, 0);
  const auto lost = only_event(store(), j.id, event_type::lease_lost);
  EXPECT_EQ(lost["run_id"], l1.run_id);
  EXPECT_EQ(lost["agent_id"], a.id);
  EXPECT_EQ(lost["reason"], "silent for 30 s");
  EXPECT_EQ(store().expire_run(l1.run_id, "again", ++now_).error().code, Errc::conflict);

  auto l2 = lease(j.id, b.id, 10'000);
  EXPECT_GT(l2.fencing_token, l1.fencing_token);
  EXPECT_EQ(store().get_run(l2.run_id)->attempt, 2);
  // The lost agent comes back with its old lease: every write is refused.
  EXPECT_EQ(store().append_run_events(l1.run_id, l1.fencing_token, {ev(1)}, ++now_).error().code,
            Errc::conflict);
  EXPECT_EQ(store().append_run_events(l2.run_id, l1.fencing_token, {ev(1)}, ++now_).error().code,
            Errc::conflict);
  EXPECT_EQ(store().renew_lease(l1.run_id, l1.fencing_token, 1000, ++now_).error().code,
            Errc::conflict);
  EXPECT_EQ(store().finish_run(l1.run_id, l1.fencing_token, a_verdict(RunOutcome::passed, 696.0),
                               ++now_).error().code,
            Errc::conflict);
  EXPECT_EQ(store().run_events(l1.run_id, 0, 10).size(), 1u);
  EXPECT_EQ(store().touch_agent(a.id, ++now_)->state, AgentState::idle);

  ASSERT_TRUE(store().append_run_events(l2.run_id, l2.fencing_token, {ev(1)}, ++now_).ok());
  auto last = store().expire_run(l2.run_id, "lease expired", ++now_);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->state, JobState::error);
  EXPECT_NE(last->state_reason.find("agent lost"), std::string::npos) << last->state_reason;
  EXPECT_EQ(last->attempts, 2);
  EXPECT_EQ(store().grant_lease(j.id, a.id, 1000, ++now_).error().code, Errc::conflict);
  EXPECT_EQ(state_history(j.id),
            (std::vector<std::string>{"leased", "queued", "leased", "error"}));
}

TEST_P(StoreContract, ARunThatNeverStartedGivesItsAttemptBackAFewTimes) {
  // One attempt: leases that never reached a working agent (nothing posted under them) do not
  // use it up, kNeverStartedRefunds times; after that they count, and the job ends.
  auto j = create("j", 0, 1);
  for (int i = 1; i <= kNeverStartedRefunds; ++i) {
    auto a = enrol("a" + std::to_string(i));
    auto l = lease(j.id, a.id);
    EXPECT_EQ(store().get_run(l.run_id)->attempt, 1);
    auto r = store().expire_run(l.run_id, "asked for work without it", ++now_);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->state, JobState::queued) << r->state_reason;
    EXPECT_EQ(r->attempts, 0);
    EXPECT_NE(r->state_reason.find("before its run started: the attempt is not counted (" +
                                   std::to_string(i) + " of " + std::to_string(kNeverStartedRefunds) +
                                   " such); requeued, attempt 1 of 1"),
              std::string::npos)
        << r->state_reason;
  }
  auto a = enrol("last");
  auto l = lease(j.id, a.id);
  auto r = store().expire_run(l.run_id, "asked for work without it", ++now_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state, JobState::error) << r->state_reason;
  EXPECT_EQ(r->attempts, 1);
}

TEST_P(StoreContract, CancellingAnActiveJobEndsItsRunAndFreesTheAgent) {
  auto j = create("j");
  auto k = create("k");
  auto a = enrol("a");
  auto l = lease(j.id, a.id);
  ASSERT_TRUE(store().append_run_events(l.run_id, l.fencing_token, {stage_started(1, "build")},
                                        ++now_).ok());
  // Requeueing a held job would let two agents run it.
  EXPECT_EQ(store().set_job_state(j.id, JobState::queued, "x", ++now_).error().code,
            Errc::conflict);
  auto c = store().set_job_state(j.id, JobState::cancelled, "user cancelled", ++now_, "sam");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->current_run_id, 0);
  EXPECT_EQ(c->cancelled_by, "sam");
  EXPECT_EQ(store().get_job(j.id)->cancelled_by, "sam");
  EXPECT_EQ(store().get_run(l.run_id)->outcome, RunOutcome::cancelled);
  EXPECT_EQ(store().get_agent(a.id)->state, AgentState::idle);
  EXPECT_EQ(store().append_run_events(l.run_id, l.fencing_token, {ev(2)}, ++now_).error().code,
            Errc::conflict);

  auto l2 = lease(k.id, a.id);
  ASSERT_TRUE(store().set_job_state(k.id, JobState::error, "build server gone", ++now_).ok());
  EXPECT_EQ(store().get_run(l2.run_id)->outcome, RunOutcome::error);
  EXPECT_EQ(store().get_agent(a.id)->current_run_id, 0);
  EXPECT_TRUE(store().running_runs().empty());
  EXPECT_TRUE(store().finished_runs(10).empty());  // no verdicts: not results
}

// A compile agent's run hands the job on to the GPU phase in one step: the run ends without a
// verdict (the results table shows only the GPU run's), the agent is free, the job is queued
// with a fresh attempt count, and a stale token hands nothing on.
TEST_P(StoreContract, HandOffEndsTheCompileRunAndQueuesTheJobForAGpuAgent) {
  auto j = create("j", 0, 2);
  auto builder = enrol("builder");
  auto gpu = enrol("gpu");
  auto l = lease(j.id, builder.id);
  ASSERT_TRUE(store().append_run_events(l.run_id, l.fencing_token,
                                        {stage_started(1, "build")}, ++now_).ok());

  EXPECT_EQ(store().hand_off_run(l.run_id, l.fencing_token + 1, "built", ++now_).error().code,
            Errc::conflict);
  auto h = store().hand_off_run(l.run_id, l.fencing_token, "built on builder", ++now_);
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->state, JobState::queued);
  EXPECT_EQ(h->state_reason, "built on builder");
  EXPECT_EQ(h->attempts, 0);
  EXPECT_EQ(h->current_run_id, 0);
  EXPECT_FALSE(h->verdict);

  auto run = store().get_run(l.run_id);
  EXPECT_EQ(run->outcome, RunOutcome::passed);
  EXPECT_EQ(run->finished_ms, now_);
  EXPECT_FALSE(run->verdict);
  EXPECT_TRUE(store().finished_runs(10).empty());
  EXPECT_EQ(store().get_agent(builder.id)->state, AgentState::idle);
  EXPECT_EQ(store().get_agent(builder.id)->current_run_id, 0);
  auto pending = store().pending_jobs();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].id, j.id);

  const auto handed = only_event(store(), j.id, event_type::run_handed_off);
  EXPECT_EQ(handed["run_id"], l.run_id);
  EXPECT_EQ(handed["agent_id"], builder.id);

  // The same run cannot hand on twice, and its late events are refused.
  EXPECT_EQ(store().hand_off_run(l.run_id, l.fencing_token, "again", ++now_).error().code,
            Errc::conflict);
  EXPECT_FALSE(store().append_run_events(l.run_id, l.fencing_token, {ev(2)}, ++now_).ok());

  // The GPU phase gets the job's full attempt budget.
  auto g = lease(j.id, gpu.id);
  EXPECT_EQ(store().get_run(g.run_id)->attempt, 1);
  ASSERT_TRUE(store().expire_run(g.run_id, "lost", ++now_).ok());
  EXPECT_EQ(store().get_job(j.id)->state, JobState::queued);
}

TEST_P(StoreContract, HandOffRefusesAJobNoLongerHeldByTheRun) {
  auto j = create("j");
  auto a = enrol("a");
  auto l = lease(j.id, a.id);
  ASSERT_TRUE(store().set_job_state(j.id, JobState::cancelled, "cancelled by user", ++now_).ok());
  auto h = store().hand_off_run(l.run_id, l.fencing_token, "built", ++now_);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(store().get_job(j.id)->state, JobState::cancelled);
}

}  // namespace kfleet::store::testing
