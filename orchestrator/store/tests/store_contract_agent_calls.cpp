// The store contract, part 5: what the store checks and hands back for the control plane
// around an agent's lease, event upload and finish, in the call's own transaction (on
// PostgreSQL each separate read would be a round trip of its own).
#include "store_contract.hpp"

namespace kfleet::store::testing {
namespace {

Verdict passed(double median_us) { return a_verdict(RunOutcome::passed, median_us); }

}  // namespace

using nlohmann::json;

void expect_same_job(const JobRecord& got, const JobRecord& stored) {
  EXPECT_EQ(got.id, stored.id);
  EXPECT_EQ(got.name, stored.name);
  EXPECT_EQ(got.state, stored.state);
  EXPECT_EQ(got.state_reason, stored.state_reason);
  EXPECT_EQ(got.attempts, stored.attempts);
  EXPECT_EQ(got.max_attempts, stored.max_attempts);
  EXPECT_EQ(got.current_run_id, stored.current_run_id);
  EXPECT_EQ(got.updated_ms, stored.updated_ms);
  EXPECT_EQ(got.spec, stored.spec);
  EXPECT_EQ(got.spec_yaml, stored.spec_yaml);
  EXPECT_EQ(got.bundle_hash, stored.bundle_hash);
  EXPECT_EQ(got.gpu, stored.gpu);
  EXPECT_EQ(got.simulated, stored.simulated);
  EXPECT_EQ(got.host_exclusive, stored.host_exclusive);
  ASSERT_EQ(got.verdict.has_value(), stored.verdict.has_value());
  if (got.verdict) {
    EXPECT_EQ(to_json(*got.verdict), to_json(*stored.verdict));
  }
}

TEST_P(StoreContract, GrantLeaseHandsBackTheJobAsTheGrantLeftIt) {
  auto j = create("j", 0, 3);
  auto a = enrol("a");
  JobRecord leased;
  auto l = store().grant_lease(j.id, a.id, 30'000, 100'000, nullptr, &leased);
  ASSERT_TRUE(l.ok()) << l.error().message;
  auto stored = store().get_job(j.id);
  ASSERT_TRUE(stored);
  expect_same_job(leased, *stored);
  EXPECT_EQ(leased.state, JobState::leased);
  EXPECT_EQ(leased.attempts, 1);
  EXPECT_EQ(leased.current_run_id, l->run_id);

  // A refused grant leaves the caller's record as it was.
  auto other = create("other");
  JobRecord untouched;
  untouched.name = "untouched";
  EXPECT_FALSE(store().grant_lease(other.id, a.id, 30'000, 100'001, nullptr, &untouched).ok());
  EXPECT_EQ(untouched.name, "untouched");
}

// A scheduling pass's leases in one call: each judged as alone, after the ones before it.
TEST_P(StoreContract, GrantLeasesJudgesEachGrantAfterTheOnesBeforeIt) {
  auto j1 = create("j1");
  auto j2 = create("j2");
  auto done = create("done");
  ASSERT_TRUE(store().set_job_state(done.id, JobState::cancelled, "no", 50).ok());
  auto a1 = enrol("a1");
  auto a2 = enrol("a2");
  auto a3 = enrol("a3");
  const json decision = {{"action", "assign"}};
  auto r = store().grant_leases({{j1.id, a1.id, decision},
                                 {done.id, a2.id, decision},   // not pending
                                 {j1.id, a2.id, decision},     // leased by the first
                                 {j2.id, a1.id, decision},     // a1 is busy since the first
                                 {j2.id, a3.id, decision}},
                                30'000, 100'000);
  ASSERT_EQ(r.size(), 5u);
  ASSERT_TRUE(r[0].ok()) << r[0].error().message;
  EXPECT_EQ(r[1].error().code, Errc::conflict);
  EXPECT_EQ(r[2].error().code, Errc::conflict);
  EXPECT_EQ(r[3].error().code, Errc::conflict);
  ASSERT_TRUE(r[4].ok()) << r[4].error().message;
  EXPECT_EQ(r[0]->lease.job_id, j1.id);
  EXPECT_EQ(r[0]->lease.agent_id, a1.id);
  EXPECT_EQ(r[4]->lease.job_id, j2.id);
  EXPECT_GT(r[4]->lease.fencing_token, r[0]->lease.fencing_token);
  expect_same_job(r[0]->job, *store().get_job(j1.id));
  expect_same_job(r[4]->job, *store().get_job(j2.id));
  EXPECT_EQ(store().get_agent(a2.id)->state, AgentState::idle);
  EXPECT_EQ(store().get_job(done.id)->state, JobState::cancelled);
  EXPECT_EQ(store().running_runs().size(), 2u);
  // Each granted job has its decision, its lease.granted and its leased state; the refused
  // ones none.
  for (auto id : {j1.id, j2.id}) {
    std::vector<std::string> types;
    for (const auto& e : store().job_events(id, 0, 100)) types.push_back(e.type);
    EXPECT_EQ(types, (std::vector<std::string>{event_type::job_submitted,
                                               event_type::sched_decision,
                                               event_type::lease_granted,
                                               event_type::job_state}))
        << "job " << id;
  }
  EXPECT_TRUE(store().grant_leases({}, 30'000, 100'001).empty());
}

TEST_P(StoreContract, AnAgentFinishesOnlyItsOwnRunAndGetsItsJobAndRegressionBack) {
  auto j = create("j");
  auto plain = create("plain");
  auto a = enrol("a");
  auto b = enrol("b");
  auto reg = store().create_regression("nightly", {{"suite", "nightly"}}, 500);
  ASSERT_TRUE(reg.ok()) << reg.error().message;
  ASSERT_TRUE(store().add_regression_job({reg->id, j.id, "k", "L4"}).ok());
  auto l = lease(j.id, a.id);

  // Another agent: forbidden before the token is looked at, and nothing changes.
  auto foreign = store().finish_agent_run(b.id, l.run_id, l.fencing_token, passed(5), 900);
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.error().code, Errc::forbidden);
  EXPECT_NE(foreign.error().message.find("only the agent that holds run"), std::string::npos)
      << foreign.error().message;
  EXPECT_EQ(store().finish_agent_run(b.id, l.run_id, l.fencing_token + 9, passed(5), 900)
                .error()
                .code,
            Errc::forbidden);
  EXPECT_EQ(store().get_run(l.run_id)->outcome, RunOutcome::running);
  EXPECT_EQ(store().get_job(j.id)->state, JobState::leased);
  EXPECT_EQ(store().finish_agent_run(a.id, l.run_id + 1000, l.fencing_token, passed(5), 900)
                .error()
                .code,
            Errc::not_found);

  // The agent's own: the amendment sees the job as read before the finish, and what it
  // changes is what is stored.
  JobState seen = JobState::queued;
  auto done = store().finish_agent_run(a.id, l.run_id, l.fencing_token, passed(5), 901,
                                       [&](const JobRecord& job, Verdict& v) {
                                         seen = job.state;
                                         v.self_reported = true;
                                       });
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(seen, JobState::leased);
  EXPECT_EQ(done->run.id, l.run_id);
  EXPECT_EQ(done->run.outcome, RunOutcome::passed);
  ASSERT_TRUE(done->run.verdict);
  EXPECT_TRUE(done->run.verdict->self_reported);
  EXPECT_TRUE(store().get_run(l.run_id)->verdict->self_reported);
  EXPECT_EQ(done->regression_id, reg->id);
  ASSERT_TRUE(done->job);
  auto stored = store().get_job(j.id);
  ASSERT_TRUE(stored);
  expect_same_job(*done->job, *stored);
  EXPECT_EQ(done->job->state, JobState::passed);

  // A job in no regression run: 0.
  auto l2 = lease(plain.id, b.id);
  auto done2 = store().finish_agent_run(b.id, l2.run_id, l2.fencing_token, passed(6), 902);
  ASSERT_TRUE(done2.ok()) << done2.error().message;
  EXPECT_EQ(done2->regression_id, 0);
  expect_same_job(*done2->job, *store().get_job(plain.id));
}

TEST_P(StoreContract, FinishesTogetherEachGetTheirOwnResult) {
  auto j1 = create("j1");
  auto j2 = create("j2");
  auto j3 = create("j3");
  auto j4 = create("j4");
  auto a1 = enrol("a1");
  auto a2 = enrol("a2");
  auto a3 = enrol("a3");
  auto a4 = enrol("a4");
  auto l1 = lease(j1.id, a1.id);
  auto l2 = lease(j2.id, a2.id);
  auto l3 = lease(j3.id, a3.id);
  auto l4 = lease(j4.id, a4.id);
  const auto events_before = store().job_events(j2.id, 0, 100).size();
  Verdict unfinished;
  unfinished.outcome = RunOutcome::running;
  Verdict slower;
  slower.outcome = RunOutcome::rejected;
  slower.reason = "slower";
  slower.simulated = true;
  std::vector<Store::FinishCall> calls = {
      {a1.id, l1.run_id, l1.fencing_token, passed(5)},
      {a2.id, l2.run_id, l2.fencing_token + 1, passed(5)},  // stale
      {a1.id, l3.run_id, l3.fencing_token, passed(5)},      // not a1's
      {a4.id, l4.run_id, l4.fencing_token, unfinished},    // no outcome
      {a4.id, l4.run_id, l4.fencing_token, slower},
  };
  auto r = store().finish_agent_runs(calls, 500);
  ASSERT_EQ(r.size(), calls.size());
  ASSERT_TRUE(r[0].ok()) << r[0].error().message;
  EXPECT_EQ(r[0]->run.id, l1.run_id);
  EXPECT_EQ(r[0]->run.outcome, RunOutcome::passed);
  ASSERT_TRUE(r[0]->job);
  EXPECT_EQ(r[0]->job->state, JobState::passed);
  ASSERT_FALSE(r[1].ok());
  EXPECT_EQ(r[1].error().code, Errc::conflict);
  ASSERT_FALSE(r[2].ok());
  EXPECT_EQ(r[2].error().code, Errc::forbidden);
  ASSERT_FALSE(r[3].ok());
  EXPECT_EQ(r[3].error().code, Errc::invalid_argument);
  ASSERT_TRUE(r[4].ok()) << r[4].error().message;
  EXPECT_EQ(r[4]->run.outcome, RunOutcome::rejected);
  ASSERT_TRUE(r[4]->job);
  EXPECT_EQ(r[4]->job->state, JobState::rejected);
  expect_same_job(*r[4]->job, *store().get_job(j4.id));
  // The refused ones wrote nothing; the others are as a finish of their own leaves them.
  EXPECT_EQ(store().get_job(j1.id)->state, JobState::passed);
  EXPECT_EQ(store().get_job(j2.id)->state, JobState::leased);
  EXPECT_EQ(store().get_job(j3.id)->state, JobState::leased);
  EXPECT_EQ(store().get_run(l2.run_id)->outcome, RunOutcome::running);
  EXPECT_EQ(store().get_run(l3.run_id)->outcome, RunOutcome::running);
  EXPECT_EQ(store().job_events(j2.id, 0, 100).size(), events_before);
  EXPECT_EQ(store().get_agent(a1.id)->state, AgentState::idle);
  EXPECT_EQ(store().get_agent(a2.id)->state, AgentState::busy);
  EXPECT_EQ(store().get_agent(a3.id)->state, AgentState::busy);
  EXPECT_EQ(store().get_agent(a4.id)->state, AgentState::idle);
  EXPECT_TRUE(store().finish_agent_runs({}, 501).empty());
}

TEST_P(StoreContract, EventsFromAnotherAgentAreForbiddenAndNoneIsStored) {
  auto j = create("j");
  auto a = enrol("a");
  auto b = enrol("b");
  auto l = lease(j.id, a.id);
  auto foreign = store().append_run_events(l.run_id, l.fencing_token, {ev(1), ev(2)}, 900, b.id);
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.error().code, Errc::forbidden);
  EXPECT_TRUE(store().run_events(l.run_id, 0, 10).empty());
  EXPECT_EQ(store().append_run_events(l.run_id + 1000, l.fencing_token, {ev(1)}, 900, a.id)
                .error()
                .code,
            Errc::not_found);
  auto own = store().append_run_events(l.run_id, l.fencing_token, {ev(1), ev(2)}, 901, a.id);
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_EQ(own->accepted, 2);
  auto stored = store().run_events(l.run_id, 0, 10);
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0].job_id, j.id);  // the run's job, whatever the events said
}

}  // namespace kfleet::store::testing
