// The store contract, part 6: a user's submission in one call (its no-repeat check, its
// token's in-flight limit, its bundle, the job and a lease planned for it, under one write
// lock), and what a
// scheduling pass reads of the fleet in one call.
#include <map>

#include "store_contract.hpp"

namespace kfleet::store::testing {

using nlohmann::json;

namespace {

Submission submission(const NewJob& j, const std::string& bundle_body) {
  Submission s;
  s.job = j;
  s.bundle_body = bundle_body;
  return s;
}

}  // namespace

TEST_P(StoreContract, ASubmissionStoresItsBundleAndItsJobTogether) {
  const std::string body("tar\0bytes\xff\x01", 12);
  NewJob j = job("a");
  j.token_key = "tok-a";
  auto done = store().submit_job(submission(j, body), ++now_);
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_FALSE(done->duplicate);
  EXPECT_FALSE(done->over_limit);
  // The job comes back as get_job reads it, with its job.submitted event and its origin.
  auto stored = store().get_job(done->job.id);
  ASSERT_TRUE(stored);
  EXPECT_EQ(done->job.name, "a");
  EXPECT_EQ(done->job.state, JobState::queued);
  EXPECT_EQ(done->job.spec, stored->spec);
  EXPECT_EQ(done->job.regions, stored->regions);
  EXPECT_EQ(done->job.created_ms, stored->created_ms);
  EXPECT_EQ(done->job.content_hash, "sha256:c-a");
  EXPECT_EQ(store().get_bundle(j.bundle_hash), body);
  auto events = store().job_events(done->job.id, 0, 10);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, event_type::job_submitted);
  EXPECT_EQ(events[0].seq, 1);
  EXPECT_EQ(events[0].data["content_hash"], "sha256:c-a");
  auto origin = store().job_origin(done->job.id);
  ASSERT_TRUE(origin);
  EXPECT_EQ(origin->token_key, "tok-a");

  // The same bundle again is no change; another body under its hash is refused, and then
  // nothing of the submission is stored: not the job, not its event.
  NewJob again = job("b");
  again.bundle_hash = j.bundle_hash;
  ASSERT_TRUE(store().submit_job(submission(again, body), ++now_).ok());
  NewJob clash = job("c");
  clash.bundle_hash = j.bundle_hash;
  auto refused = store().submit_job(submission(clash, "other"), ++now_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Errc::conflict);
  EXPECT_NE(refused.error().message.find("different content"), std::string::npos);
  EXPECT_EQ(store().get_bundle(j.bundle_hash), body);
  JobFilter named;
  named.name = "c";
  EXPECT_TRUE(store().list_jobs(named).empty());
  const auto last = store().events_after(0, 100);
  ASSERT_FALSE(last.empty());
  EXPECT_EQ(last.back().data["name"], "b");
}

TEST_P(StoreContract, ASubmissionIsAnsweredByAnIdenticalJobUnlessThatOneFailed) {
  auto first = store().submit_job(submission(job("a"), "body"), ++now_);
  ASSERT_TRUE(first.ok()) << first.error().message;
  Submission again = submission(job("a"), "body");
  again.reuse_identical = true;
  const auto events_before = store().events_after(0, 100).size();
  auto dup = store().submit_job(again, ++now_);
  ASSERT_TRUE(dup.ok()) << dup.error().message;
  EXPECT_TRUE(dup->duplicate);
  EXPECT_EQ(dup->job.id, first->job.id);
  EXPECT_EQ(store().events_after(0, 100).size(), events_before) << "a duplicate writes nothing";
  // Without reuse_identical (a forced submit) it is a new job.
  auto forced = store().submit_job(submission(job("a"), "body"), ++now_);
  ASSERT_TRUE(forced.ok());
  EXPECT_FALSE(forced->duplicate);
  EXPECT_GT(forced->job.id, first->job.id);
  // The newest identical job answers; one that ended in error does not.
  ASSERT_TRUE(store().set_job_state(forced->job.id, JobState::error, "broke", ++now_).ok());
  auto after_error = store().submit_job(again, ++now_);
  ASSERT_TRUE(after_error.ok());
  EXPECT_FALSE(after_error->duplicate);
  EXPECT_GT(after_error->job.id, forced->job.id);
}

TEST_P(StoreContract, ASubmissionOverItsTokensLimitWritesNothing) {
  auto submit = [&](const std::string& name, const std::string& token) {
    NewJob j = job(name);
    j.token_key = token;
    Submission s = submission(j, "body-" + name);
    s.in_flight_limit = 2;
    auto r = store().submit_job(s, ++now_);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : Submitted{};
  };
  auto a = submit("a", "t1");
  EXPECT_FALSE(a.over_limit);
  EXPECT_EQ(a.in_flight, 0);
  auto b = submit("b", "t1");
  EXPECT_FALSE(b.over_limit);
  EXPECT_EQ(b.in_flight, 1);
  auto c = submit("c", "t1");
  EXPECT_TRUE(c.over_limit);
  EXPECT_EQ(c.in_flight, 2);
  EXPECT_EQ(c.job.id, 0);
  EXPECT_FALSE(store().get_bundle("sha256:b-c")) << "nothing of a refused submission is stored";
  EXPECT_FALSE(submit("d", "t2").over_limit) << "the limit is per token";
  // A verdict frees a place.
  ASSERT_TRUE(store().set_job_state(a.job.id, JobState::cancelled, "by ana", ++now_).ok());
  auto e = submit("e", "t1");
  EXPECT_FALSE(e.over_limit);
  EXPECT_EQ(e.in_flight, 1);
}

// A lease planned before the job had an id is granted in the submission's own transaction:
// the job comes back leased, its events in order (submitted, the decision, lease.granted,
// job.state). A grant the lease rules refuse writes nothing of its own and leaves the job
// queued; a duplicate grants nothing.
TEST_P(StoreContract, ASubmissionGrantsTheLeasePlannedForItWhenTheRulesAllow) {
  auto a = enrol("a");
  Submission s = submission(job("j"), "body");
  s.reuse_identical = true;
  s.grant = Submission::Grant{a.id, json{{"action", "assign"}, {"agent_id", a.id}}, 30'000};
  auto done = store().submit_job(s, ++now_);
  ASSERT_TRUE(done.ok()) << done.error().message;
  ASSERT_TRUE(done->lease);
  EXPECT_EQ(done->lease->job_id, done->job.id);
  EXPECT_EQ(done->lease->agent_id, a.id);
  EXPECT_EQ(done->lease->expires_ms, now_ + 30'000);
  EXPECT_EQ(done->job.state, JobState::leased);
  EXPECT_EQ(done->job.attempts, 1);
  EXPECT_EQ(done->job.current_run_id, done->lease->run_id);
  auto stored = store().get_job(done->job.id);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->state, JobState::leased);
  EXPECT_EQ(stored->state_reason, done->job.state_reason);
  auto run = store().get_run(done->lease->run_id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->fencing_token, done->lease->fencing_token);
  EXPECT_EQ(store().get_agent(a.id)->state, AgentState::busy);
  auto events = store().job_events(done->job.id, 0, 10);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].type, event_type::job_submitted);
  EXPECT_EQ(events[1].type, event_type::sched_decision);
  EXPECT_EQ(events[2].type, event_type::lease_granted);
  EXPECT_EQ(events[3].type, event_type::job_state);
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].seq, static_cast<int>(i) + 1);
    if (i) {
      EXPECT_EQ(events[i].id, events[i - 1].id + 1);
    }
  }
  // The events say what a pass's grant says (PostgreSQL writes them in the submit's own
  // statement).
  EXPECT_EQ(events[1].data, (json{{"action", "assign"}, {"agent_id", a.id}}));
  EXPECT_EQ(events[2].data, (json{{"agent_id", a.id},
                                  {"attempt", 1},
                                  {"fencing_token", done->lease->fencing_token},
                                  {"host", run->host},
                                  {"host_exclusive", false},
                                  {"run_id", done->lease->run_id},
                                  {"slot", run->slot}}));
  EXPECT_EQ(events[3].data,
            (json{{"reason", done->job.state_reason}, {"state", "leased"}}));
  EXPECT_EQ(done->job.state_reason, "leased to agent " + std::to_string(a.id) + " (a), attempt 1 of " +
                                        std::to_string(done->job.max_attempts));

  // The agent is busy now: a second job's grant to it is refused, and the job stays queued
  // with only its own event.
  s.job = job("k");
  auto queued = store().submit_job(s, ++now_);
  ASSERT_TRUE(queued.ok()) << queued.error().message;
  EXPECT_FALSE(queued->lease);
  EXPECT_EQ(queued->job.state, JobState::queued);
  EXPECT_EQ(store().get_job(queued->job.id)->state, JobState::queued);
  EXPECT_EQ(store().job_events(queued->job.id, 0, 10).size(), 1u);
  EXPECT_EQ(store().get_agent(a.id)->current_run_id, done->lease->run_id);

  // An identical job answers for a third: nothing is written, nothing granted, even to an
  // idle agent.
  auto b = enrol("b");
  s.grant->agent_id = b.id;
  const auto events_before = store().events_after(0, 100).size();
  auto dup = store().submit_job(s, ++now_);
  ASSERT_TRUE(dup.ok()) << dup.error().message;
  EXPECT_TRUE(dup->duplicate);
  EXPECT_FALSE(dup->lease);
  EXPECT_EQ(store().events_after(0, 100).size(), events_before);
  EXPECT_EQ(store().get_agent(b.id)->state, AgentState::idle);
  EXPECT_EQ(store().get_agent(b.id)->current_run_id, 0);
}

// A job's kernel.language is a column of its row: the scheduler's scan of the queue
// (pending_jobs, which leaves the spec out) reads it beside the GPU class. It comes from
// NewJob::language, else the spec's kernel.language, else cuda; every way a job is written and
// read (create, submit with and without a grant, get_job, list_jobs, pending_jobs) carries it.
TEST_P(StoreContract, AJobsLanguageIsStoredAndReadWithoutItsSpec) {
  NewJob triton = job("t");
  triton.spec = json{{"name", "t"}, {"kernel", {{"family", "attention"}, {"language", "triton"}}}};
  NewJob torch = job("p");
  torch.language = "torch";  // said outright: wins over the spec (which names none here)
  NewJob plain = job("c");   // a spec without kernel.language: cuda
  NewJob hip = job("h");
  hip.spec = json{{"name", "h"}, {"kernel", {{"language", "hip"}}}};
  ASSERT_EQ(store().create_job(triton, ++now_)->language, "triton");
  auto t = store().submit_job(submission(torch, "body-p"), ++now_);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->job.language, "torch");
  EXPECT_EQ(store().create_job(plain, ++now_)->language, "cuda");
  auto a = enrol("a");
  Submission granted = submission(hip, "body-h");
  granted.grant = Submission::Grant{a.id, json{{"action", "assign"}, {"agent_id", a.id}}, 30'000};
  auto h = store().submit_job(granted, ++now_);
  ASSERT_TRUE(h.ok()) << h.error().message;
  ASSERT_TRUE(h->lease);
  EXPECT_EQ(h->job.language, "hip");
  EXPECT_EQ(h->lease->run_id, h->job.current_run_id);  // the grant's columns follow the job's

  std::map<std::string, std::string> pending;
  for (const auto& j : store().pending_jobs()) {
    EXPECT_TRUE(j.spec.is_null()) << "pending_jobs reads no spec";
    pending[j.name] = j.language;
  }
  EXPECT_EQ(pending, (std::map<std::string, std::string>{{"t", "triton"}, {"p", "torch"},
                                                         {"c", "cuda"}}));
  EXPECT_EQ(store().get_job(h->job.id)->language, "hip");
  JobFilter f;
  f.name = "t";
  auto listed = store().list_jobs(f);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].language, "triton");
}

TEST_P(StoreContract, AFleetViewIsTheLiveAgentsTheRunningRunsAndTheRegionBlocks) {
  auto a = enrol("a");
  auto b = enrol("b");
  auto gone = enrol("gone");
  ASSERT_TRUE(store().set_agent_state(gone.id, AgentState::retired, ++now_).ok());
  auto j = create("j");
  auto l = lease(j.id, a.id);
  RegionBlock block{"terraform", "us-east-1a", "H100", "stockout", "no capacity", 1, 1000, 61'000};
  store().put_region_block(block);
  auto v = store().fleet_view();
  ASSERT_EQ(v.agents.size(), 2u);
  EXPECT_EQ(v.agents[0].id, a.id);
  EXPECT_EQ(v.agents[0].state, AgentState::busy);
  EXPECT_EQ(v.agents[1].id, b.id);
  EXPECT_EQ(v.agents[1].gpus.size(), store().list_agents()[1].gpus.size());
  ASSERT_EQ(v.running.size(), 1u);
  EXPECT_EQ(v.running[0].id, l.run_id);
  EXPECT_EQ(v.running[0].agent_id, a.id);
  ASSERT_EQ(v.blocks.size(), 1u);
  EXPECT_EQ(v.blocks[0].region, "us-east-1a");
  EXPECT_EQ(v.blocks[0].until_ms, 61'000);
  // The store works on after it (PostgreSQL: the pipeline is left clean).
  EXPECT_TRUE(store().touch_agent(b.id, ++now_).ok());
  EXPECT_EQ(store().fleet_view().agents.size(), 2u);
}

}  // namespace kfleet::store::testing
