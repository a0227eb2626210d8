// The store contract, part 1: jobs (their fields, states, pages and origins) and the helpers
// every part uses.
#include "store_contract.hpp"

namespace kfleet::store::testing {

using nlohmann::json;

NewJob StoreContract::job(const std::string& name, int priority, int max_attempts) {
  NewJob j;
  j.name = name;
  j.campaign = "c1";
  j.priority = priority;
  j.gpu = "L4";
  j.regions = {"us-east-1", "eu-west-1"};
  j.spec = json{{"name", name}, {"kernel", "gemm"}};
  j.spec_yaml = "name: " + name + "\n";
  j.source_name = name + ".yaml";
  j.bundle_hash = "sha256:b-" + name;
  j.content_hash = "sha256:c-" + name;
  j.max_attempts = max_attempts;
  j.submitted_by = "ana";
  return j;
}

NewAgent StoreContract::agent(const std::string& name, bool simulated_gpu) {
  NewAgent a;
  a.name = name;
  a.region = "us-east-1";
  a.backend = "cuda";
  GpuInfo g;
  g.gpu_class = "L4";
  g.arch = "sm_89";
  g.name = "NVIDIA L4";
  g.vendor = "nvidia";
  g.memory_bytes = 24LL << 30;
  g.simulated = simulated_gpu;
  a.gpus = {g};
  a.token_hash = "th-" + name;
  a.provider = "static";
  a.info = json{{"host", name + ".local"}};
  return a;
}

JobRecord StoreContract::create(const std::string& name, int priority, int max_attempts) {
  auto r = store().create_job(job(name, priority, max_attempts), ++now_);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : JobRecord{};
}

JobRecord StoreContract::create_child(const std::string& name, std::int64_t parent_job_id) {
  NewJob j = job(name);
  j.token_key = "tok-1";
  j.parent_job_id = parent_job_id;
  j.change = nlohmann::json{{"summary", "kernel.defines +X=1"}};
  auto r = store().create_job(j, ++now_);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : JobRecord{};
}

AgentRecord StoreContract::enrol(const std::string& name) {
  auto r = store().enrol_agent(agent(name), ++now_);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : AgentRecord{};
}

Lease StoreContract::lease(std::int64_t job_id, std::int64_t agent_id, TimeMs ttl) {
  auto r = store().grant_lease(job_id, agent_id, ttl, ++now_);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : Lease{};
}

Event StoreContract::ev(std::int64_t seq, const std::string& type, json data) {
  Event e;
  e.seq = seq;
  e.type = type;
  e.ts_ms = 1'700'000'100'000 + seq;
  e.data = std::move(data);
  return e;
}

Event StoreContract::stage_started(std::int64_t seq, const std::string& stage) {
  return ev(seq, event_type::stage_started, json{{"stage", stage}});
}

std::vector<std::string> StoreContract::state_history(std::int64_t job_id) {
  std::vector<std::string> out;
  for (const auto& e : store().job_events(job_id, 0, 10'000))
    if (e.type == event_type::job_state) out.push_back(e.data.value("state", "?"));
  return out;
}

TEST_P(StoreContract, CreateJobStoresEveryFieldAndASubmittedEvent) {
  auto j = job("gemm-a", 5, 4);
  auto r = store().create_job(j, 1234);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto got = store().get_job(r->id);
  ASSERT_TRUE(got);
  EXPECT_GT(got->id, 0);
  EXPECT_EQ(got->name, "gemm-a");
  EXPECT_EQ(got->campaign, "c1");
  EXPECT_EQ(got->priority, 5);
  EXPECT_EQ(got->gpu, "L4");
  EXPECT_EQ(got->regions, j.regions);
  EXPECT_EQ(got->spec, j.spec);
  EXPECT_EQ(got->spec_yaml, j.spec_yaml);
  EXPECT_EQ(got->source_name, "gemm-a.yaml");
  EXPECT_EQ(got->bundle_hash, j.bundle_hash);
  EXPECT_EQ(got->content_hash, j.content_hash);
  EXPECT_EQ(got->state, JobState::queued);
  EXPECT_EQ(got->attempts, 0);
  EXPECT_EQ(got->max_attempts, 4);
  EXPECT_EQ(got->current_run_id, 0);
  EXPECT_EQ(got->submitted_by, "ana");
  EXPECT_EQ(got->created_ms, 1234);
  EXPECT_FALSE(got->verdict);
  EXPECT_FALSE(got->simulated);

  auto evs = store().job_events(got->id, 0, 100);
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].type, event_type::job_submitted);
  EXPECT_EQ(evs[0].run_id, 0);
  EXPECT_EQ(evs[0].seq, 1);
  EXPECT_EQ(evs[0].ts_ms, 1234);
  EXPECT_EQ(evs[0].job_id, got->id);
  EXPECT_GT(evs[0].id, 0);
}

TEST_P(StoreContract, CreateJobRejectsANamelessJobOrZeroAttempts) {
  auto nameless = job("");
  auto r = store().create_job(nameless, now_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  auto r2 = store().create_job(job("x", 0, 0), now_);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code, Errc::invalid_argument);
  EXPECT_TRUE(store().list_jobs({}).empty());
}

TEST_P(StoreContract, UnknownIdsAreEmptyNotErrors) {
  EXPECT_FALSE(store().get_job(999));
  EXPECT_FALSE(store().get_run(999));
  EXPECT_FALSE(store().get_agent(999));
  EXPECT_TRUE(store().runs_for_job(999).empty());
  EXPECT_TRUE(store().run_events(999, 0, 10).empty());
  auto s = store().set_job_state(999, JobState::cancelled, "x", now_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Errc::not_found);
}

TEST_P(StoreContract, CancelRecordsWhoCancelled) {
  auto a = create("a");
  auto b = create("b");
  auto c = create("c");
  EXPECT_EQ(a.cancelled_by, "");
  auto ca = store().set_job_state(a.id, JobState::cancelled, "cancelled by sam", ++now_, "sam");
  ASSERT_TRUE(ca.ok()) << ca.error().message;
  EXPECT_EQ(ca->cancelled_by, "sam");
  // Other states never name a canceller, whatever `by` says.
  ASSERT_TRUE(store().set_job_state(b.id, JobState::waiting_capacity, "stockout", ++now_, "eve").ok());
  EXPECT_EQ(store().get_job(b.id)->cancelled_by, "");
  ASSERT_TRUE(store().set_job_state(c.id, JobState::cancelled, "cancelled by user", ++now_).ok());
  // A refused second cancel keeps the first canceller.
  EXPECT_EQ(store().set_job_state(a.id, JobState::cancelled, "again", ++now_, "eve").error().code,
            Errc::conflict);
  EXPECT_EQ(store().get_job(a.id)->cancelled_by, "sam");
  EXPECT_EQ(store().get_job(c.id)->cancelled_by, "");
  JobFilter f;
  f.states = {JobState::cancelled};
  auto listed = store().list_jobs(f);  // newest first: c, then a
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].cancelled_by, "");
  EXPECT_EQ(listed[1].cancelled_by, "sam");
  EXPECT_EQ(store().pending_jobs().at(0).cancelled_by, "");  // b, waiting for capacity
}

TEST_P(StoreContract, ListJobsIsNewestFirstAndFilters) {
  auto a = create("a");
  auto b = create("b");
  auto c = create("c");
  auto other = job("d");
  other.campaign = "c2";
  auto d = store().create_job(other, ++now_);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(store().set_job_state(b.id, JobState::cancelled, "user", ++now_).ok());

  auto all = store().list_jobs({});
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].id, d->id);
  EXPECT_EQ(all[3].id, a.id);

  JobFilter f;
  f.states = {JobState::cancelled};
  auto cancelled = store().list_jobs(f);
  ASSERT_EQ(cancelled.size(), 1u);
  EXPECT_EQ(cancelled[0].id, b.id);

  f = {};
  f.states = {JobState::queued, JobState::cancelled};
  f.campaign = "c1";
  EXPECT_EQ(store().list_jobs(f).size(), 3u);

  f = {};
  f.name = "c";
  auto by_name = store().list_jobs(f);
  ASSERT_EQ(by_name.size(), 1u);
  EXPECT_EQ(by_name[0].id, c.id);
  EXPECT_FALSE(by_name[0].spec.is_null());
  // A listing's page without the spec: everything else as before.
  f.with_spec = false;
  auto bare = store().list_jobs(f);
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_TRUE(bare[0].spec.is_null());
  EXPECT_EQ(bare[0].spec_yaml, "");
  EXPECT_EQ(bare[0].name, "c");
  EXPECT_EQ(bare[0].campaign, by_name[0].campaign);
  EXPECT_EQ(bare[0].content_hash, by_name[0].content_hash);
  EXPECT_EQ(bare[0].state, by_name[0].state);

  f = {};
  f.limit = 2;
  auto page1 = store().list_jobs(f);
  ASSERT_EQ(page1.size(), 2u);
  f.before_id = page1.back().id;
  auto page2 = store().list_jobs(f);
  ASSERT_EQ(page2.size(), 2u);
  EXPECT_EQ(page2[0].id, b.id);
  EXPECT_EQ(page2[1].id, a.id);
}

TEST_P(StoreContract, PendingJobsArePriorityDescThenFifo) {
  auto low1 = create("low1", 0);
  auto high1 = create("high1", 10);
  auto low2 = create("low2", 0);
  auto high2 = create("high2", 10);
  auto mid = create("mid", 5);
  auto gone = create("gone", 99);
  ASSERT_TRUE(store().set_job_state(mid.id, JobState::waiting_capacity, "stockout", ++now_).ok());
  ASSERT_TRUE(store().set_job_state(gone.id, JobState::cancelled, "user", ++now_).ok());
  auto busy = create("busy", 50);
  auto ag = enrol("a1");
  lease(busy.id, ag.id);

  std::vector<std::int64_t> ids;
  for (const auto& j : store().pending_jobs()) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{high1.id, high2.id, mid.id, low1.id, low2.id}));
}

TEST_P(StoreContract, SetJobStateWritesAnEventAndTerminalJobsCannotChange) {
  auto j = create("j");
  auto r = store().set_job_state(j.id, JobState::waiting_capacity, "us-east-1 stockout", 5000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->state, JobState::waiting_capacity);
  EXPECT_EQ(r->state_reason, "us-east-1 stockout");
  EXPECT_EQ(r->updated_ms, 5000);
  auto evs = store().job_events(j.id, 0, 100);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[1].type, event_type::job_state);
  EXPECT_EQ(evs[1].data["state"], "waiting_capacity");
  EXPECT_EQ(evs[1].data["reason"], "us-east-1 stockout");
  EXPECT_EQ(evs[1].seq, 2);

  auto active = store().set_job_state(j.id, JobState::building, "no agent", 5500);
  ASSERT_FALSE(active.ok());
  EXPECT_EQ(active.error().code, Errc::invalid_argument);
  ASSERT_TRUE(store().set_job_state(j.id, JobState::cancelled, "user asked", 6000).ok());
  for (auto s : {JobState::queued, JobState::passed, JobState::cancelled}) {
    auto again = store().set_job_state(j.id, s, "again", 7000);
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().code, Errc::conflict);
  }
  auto now = store().get_job(j.id);
  EXPECT_EQ(now->state, JobState::cancelled);
  EXPECT_EQ(now->state_reason, "user asked");
  EXPECT_EQ(store().job_events(j.id, 0, 100).size(), 3u);
}

TEST_P(StoreContract, SetJobStatesJudgesEachChangeAloneAndKeepsTheirOrder) {
  auto a = create("a");
  auto b = create("b");
  auto gone = create("gone");
  ASSERT_TRUE(store().set_job_state(gone.id, JobState::cancelled, "user", 5000).ok());
  auto rs = store().set_job_states({{a.id, JobState::waiting_capacity, "stockout"},
                                    {gone.id, JobState::queued, "again"},
                                    {999, JobState::queued, "nobody"},
                                    {b.id, JobState::queued, "waiting for an idle L4 agent"}},
                                   6000);
  ASSERT_EQ(rs.size(), 4u);
  ASSERT_TRUE(rs[0].ok()) << rs[0].error().message;
  EXPECT_EQ(rs[0]->id, a.id);
  EXPECT_EQ(rs[0]->state, JobState::waiting_capacity);
  ASSERT_FALSE(rs[1].ok());
  EXPECT_EQ(rs[1].error().code, Errc::conflict);
  ASSERT_FALSE(rs[2].ok());
  EXPECT_EQ(rs[2].error().code, Errc::not_found);
  ASSERT_TRUE(rs[3].ok()) << rs[3].error().message;
  EXPECT_EQ(rs[3]->state_reason, "waiting for an idle L4 agent");
  // The refusals wrote nothing; the others are stored with their job.state event.
  EXPECT_EQ(store().get_job(gone.id)->state, JobState::cancelled);
  EXPECT_EQ(store().get_job(a.id)->state_reason, "stockout");
  auto evs = store().job_events(b.id, 0, 100);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[1].data["reason"], "waiting for an idle L4 agent");
  EXPECT_EQ(evs[1].ts_ms, 6000);
  // What comes back is the job as stored.
  expect_same_job(*rs[0], *store().get_job(a.id));
  expect_same_job(*rs[3], *store().get_job(b.id));
  EXPECT_TRUE(store().set_job_states({}, 7000).empty());

  // A job changed twice in one batch: the second change sees the first. A cancel, and a held
  // job ended (its run ends and its agent is freed), beside plain changes.
  auto c = create("c");
  auto held = create("held");
  auto agent = enrol("ag");
  auto l = lease(held.id, agent.id);
  auto more = store().set_job_states({{a.id, JobState::queued, "first"},
                                      {c.id, JobState::cancelled, "not needed"},
                                      {a.id, JobState::waiting_capacity, "second"},
                                      {held.id, JobState::error, "build server gone"},
                                      {b.id, JobState::waiting_capacity, "stockout"}},
                                     8000);
  ASSERT_EQ(more.size(), 5u);
  for (std::size_t i = 0; i < more.size(); ++i) ASSERT_TRUE(more[i].ok()) << i;
  EXPECT_EQ(more[0]->state_reason, "first");
  EXPECT_EQ(more[2]->state, JobState::waiting_capacity);
  EXPECT_EQ(more[2]->state_reason, "second");
  expect_same_job(*more[2], *store().get_job(a.id));
  expect_same_job(*more[1], *store().get_job(c.id));
  EXPECT_EQ(more[1]->state, JobState::cancelled);
  expect_same_job(*more[3], *store().get_job(held.id));
  EXPECT_EQ(more[3]->current_run_id, 0);
  EXPECT_EQ(store().get_run(l.run_id)->outcome, RunOutcome::error);
  EXPECT_EQ(store().get_agent(agent.id)->state, AgentState::idle);
  expect_same_job(*more[4], *store().get_job(b.id));
  EXPECT_EQ(store().job_events(a.id, 0, 100).size(), 4u);  // submitted, stockout, first, second
}

TEST_P(StoreContract, FindJobByContentHashReturnsTheNewest) {
  auto first = store().create_job(job("x"), ++now_);
  auto second = store().create_job(job("x"), ++now_);
  create("y");
  ASSERT_TRUE(first.ok() && second.ok());
  auto found = store().find_job_by_content_hash("sha256:c-x");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, second->id);
  EXPECT_FALSE(store().find_job_by_content_hash("sha256:none"));
  EXPECT_FALSE(store().find_job_by_content_hash(""));
}

// One job's page (the API's GET /api/v1/jobs/{id}) is what the three reads it replaces give:
// the job, its runs oldest first, its origin; nothing for a job that does not exist.
TEST_P(StoreContract, AJobsPageIsTheJobItsRunsAndItsOrigin) {
  auto root = create("root");
  const JobRecord child = create_child("a", root.id);
  ASSERT_NE(child.id, 0);
  auto ag = enrol("g");
  lease(child.id, ag.id);
  const auto page = store().job_page(child.id);
  ASSERT_TRUE(page.job);
  const auto job = store().get_job(child.id);
  EXPECT_EQ(page.job->id, job->id);
  EXPECT_EQ(page.job->state, job->state);
  EXPECT_EQ(page.job->spec, job->spec);
  EXPECT_EQ(page.job->current_run_id, job->current_run_id);
  const auto runs = store().runs_for_job(child.id);
  ASSERT_EQ(page.runs.size(), 1u);
  EXPECT_EQ(page.runs[0].id, runs[0].id);
  EXPECT_EQ(page.runs[0].agent_id, ag.id);
  ASSERT_TRUE(page.origin);
  EXPECT_EQ(page.origin->parent_job_id, root.id);
  EXPECT_EQ(page.origin->change["summary"], "kernel.defines +X=1");
  const auto plain = store().job_page(root.id);
  ASSERT_TRUE(plain.job);
  EXPECT_TRUE(plain.runs.empty());
  EXPECT_FALSE(plain.origin);
  const auto none = store().job_page(child.id + 100);
  EXPECT_FALSE(none.job);
  EXPECT_TRUE(none.runs.empty());
  EXPECT_FALSE(none.origin);
}

// Where a job came from: the token that submitted it (its in-flight count) and, for a child
// submitted as parent + change, the parent and the change, listed by parent.
TEST_P(StoreContract, JobOriginsRecordTokenParentAndChange) {
  auto root = create("root");
  const JobRecord child = create_child("a", root.id);
  ASSERT_NE(child.id, 0);
  NewJob b = job("b");
  b.token_key = "tok-1";
  auto other = store().create_job(b, ++now_);
  ASSERT_TRUE(other.ok());

  EXPECT_FALSE(store().job_origin(root.id));  // made without a token or a parent
  auto o = store().job_origin(child.id);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->token_key, "tok-1");
  EXPECT_EQ(o->parent_job_id, root.id);
  EXPECT_EQ(o->change["summary"], "kernel.defines +X=1");
  auto plain = store().job_origin(other->id);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->parent_job_id, 0);
  EXPECT_TRUE(plain->change.is_null());

  auto children = store().children_of(root.id);
  ASSERT_EQ(children.size(), 1u);
  EXPECT_EQ(children[0].job_id, child.id);
  EXPECT_TRUE(store().children_of(child.id).empty());

  // In flight: queued counts, finished does not; another token's jobs do not.
  EXPECT_EQ(store().in_flight_jobs_of("tok-1"), 2);
  ASSERT_TRUE(store().set_job_state(other->id, JobState::cancelled, "cancelled", ++now_).ok());
  EXPECT_EQ(store().in_flight_jobs_of("tok-1"), 1);
  EXPECT_EQ(store().in_flight_jobs_of("tok-2"), 0);
  EXPECT_EQ(store().in_flight_jobs_of(""), 0);
}

}  // namespace kfleet::store::testing
