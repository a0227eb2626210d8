// The store contract, part 2: leases, fencing, event ingestion and verdicts (how a run ends
// otherwise: store_contract_run_ends.cpp).
#include <algorithm>
#include <limits>
#include <map>

#include "store_contract.hpp"

namespace kfleet::store::testing {

using nlohmann::json;

namespace {

Verdict verdict(RunOutcome o, const std::string& reason, bool simulated = false) {
  return a_verdict(o, 696.0, reason, simulated);
}

}  // namespace

TEST_P(StoreContract, GrantLeaseStartsARunAndRecordsIt) {
  auto j = create("j", 0, 3);
  auto a = enrol("a");
  auto r = store().grant_lease(j.id, a.id, 30'000, 100'000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->job_id, j.id);
  EXPECT_EQ(r->agent_id, a.id);
  EXPECT_EQ(r->expires_ms, 130'000);
  EXPECT_GT(r->fencing_token, 0);

  auto run = store().get_run(r->run_id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->attempt, 1);
  EXPECT_EQ(run->outcome, RunOutcome::running);
  EXPECT_EQ(run->fencing_token, r->fencing_token);
  EXPECT_EQ(run->started_ms, 100'000);
  EXPECT_EQ(run->lease_expires_ms, 130'000);

  auto job = store().get_job(j.id);
  EXPECT_EQ(job->state, JobState::leased);
  EXPECT_EQ(job->attempts, 1);
  EXPECT_EQ(job->current_run_id, r->run_id);
  auto ag = store().get_agent(a.id);
  EXPECT_EQ(ag->state, AgentState::busy);
  EXPECT_EQ(ag->current_run_id, r->run_id);

  auto evs = store().job_events(j.id, 0, 100);
  ASSERT_EQ(evs.size(), 3u);
  EXPECT_EQ(evs[1].type, event_type::lease_granted);
  EXPECT_EQ(evs[1].data["run_id"], r->run_id);
  EXPECT_EQ(evs[1].data["agent_id"], a.id);
  EXPECT_EQ(evs[1].data["fencing_token"], r->fencing_token);
  EXPECT_EQ(evs[1].data["attempt"], 1);
  EXPECT_EQ(evs[2].data["state"], "leased");
  EXPECT_EQ(evs[2].seq, 3);

  EXPECT_EQ(store().running_runs().size(), 1u);
  EXPECT_EQ(store().runs_for_job(j.id).size(), 1u);
}

// The scheduler's decision travels with the lease it chose: written first, in the lease's
// transaction, and not at all when the lease is refused.
TEST_P(StoreContract, GrantLeaseWritesTheDecisionWithTheLeaseOrNotAtAll) {
  auto j = create("j", 0, 3);
  auto a = enrol("a");
  auto b = enrol("b");
  const nlohmann::json why = {{"action", "assign"}, {"agent_id", a.id}, {"reason", "fits"}};
  auto r = store().grant_lease(j.id, a.id, 30'000, 100'000, why);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto evs = store().job_events(j.id, 0, 100);
  ASSERT_EQ(evs.size(), 4u);
  EXPECT_EQ(evs[1].type, event_type::sched_decision);
  EXPECT_EQ(evs[1].data, why);
  EXPECT_EQ(evs[1].seq, 2);
  EXPECT_EQ(evs[2].type, event_type::lease_granted);
  EXPECT_EQ(evs[2].data["run_id"], r->run_id);
  EXPECT_EQ(evs[2].data["fencing_token"], r->fencing_token);
  EXPECT_EQ(evs[2].data["host"], a.host);
  EXPECT_EQ(evs[3].data["state"], "leased");
  EXPECT_EQ(evs[3].seq, 4);
  EXPECT_LT(evs[1].id, evs[2].id);
  EXPECT_LT(evs[2].id, evs[3].id);

  // The job is leased already: refused, and the second decision leaves nothing behind.
  auto again = store().grant_lease(j.id, b.id, 30'000, 100'001, why);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::conflict);
  EXPECT_EQ(store().job_events(j.id, 0, 100).size(), 4u);
}

TEST_P(StoreContract, FencingTokensStrictlyIncreaseAcrossAllLeases) {
  std::int64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto j = create("j" + std::to_string(i));
    auto a = enrol("a" + std::to_string(i));
    auto l = lease(j.id, a.id);
    EXPECT_GT(l.fencing_token, last);
    last = l.fencing_token;
    if (i % 2) {
      ASSERT_TRUE(store().expire_run(l.run_id, "lease expired", ++now_).ok());
    }
  }
}

TEST_P(StoreContract, AnAgentNeverHoldsTwoRuns) {
  auto j1 = create("j1");
  auto j2 = create("j2");
  auto a = enrol("a");
  auto l1 = lease(j1.id, a.id);
  auto second = store().grant_lease(j2.id, a.id, 30'000, ++now_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Errc::conflict);
  EXPECT_EQ(store().get_job(j2.id)->state, JobState::queued);
  EXPECT_EQ(store().get_job(j2.id)->attempts, 0);
  EXPECT_TRUE(store().runs_for_job(j2.id).empty());
  EXPECT_EQ(store().get_agent(a.id)->current_run_id, l1.run_id);

  // Marking it idle by hand must not open a second slot either.
  auto idle = store().set_agent_state(a.id, AgentState::idle, ++now_);
  ASSERT_FALSE(idle.ok());
  EXPECT_EQ(idle.error().code, Errc::conflict);
  EXPECT_FALSE(store().grant_lease(j2.id, a.id, 30'000, ++now_).ok());
}

TEST_P(StoreContract, GrantLeaseRefusesJobsThatAreNotPendingAndAgentsThatAreNotIdle) {
  auto j = create("j");
  auto a = enrol("a");
  auto b = enrol("b");
  lease(j.id, a.id);
  auto again = store().grant_lease(j.id, b.id, 30'000, ++now_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::conflict);

  auto cancelled = create("cancelled");
  ASSERT_TRUE(store().set_job_state(cancelled.id, JobState::cancelled, "user", ++now_).ok());
  EXPECT_EQ(store().grant_lease(cancelled.id, b.id, 30'000, ++now_).error().code, Errc::conflict);

  auto waiting = create("waiting");
  ASSERT_TRUE(store().set_job_state(waiting.id, JobState::waiting_capacity, "x", ++now_).ok());
  ASSERT_TRUE(store().set_agent_state(b.id, AgentState::lost, ++now_).ok());
  EXPECT_EQ(store().grant_lease(waiting.id, b.id, 30'000, ++now_).error().code, Errc::conflict);
  ASSERT_TRUE(store().touch_agent(b.id, ++now_).ok());
  EXPECT_TRUE(store().grant_lease(waiting.id, b.id, 30'000, ++now_).ok());

  EXPECT_EQ(store().grant_lease(999, b.id, 30'000, ++now_).error().code, Errc::not_found);
  auto fresh = create("fresh");
  EXPECT_EQ(store().grant_lease(fresh.id, 999, 30'000, ++now_).error().code, Errc::not_found);
}

TEST_P(StoreContract, RenewLeaseExtendsOnlyWithTheCurrentToken) {
  auto j = create("j");
  auto a = enrol("a");
  auto l = lease(j.id, a.id, 10'000);
  auto r = store().renew_lease(l.run_id, l.fencing_token, 20'000, 500'000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->expires_ms, 520'000);
  EXPECT_EQ(store().get_run(l.run_id)->lease_expires_ms, 520'000);
  auto stale = store().renew_lease(l.run_id, l.fencing_token + 1, 20'000, 500'001);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, Errc::conflict);
  EXPECT_EQ(store().renew_lease(999, 1, 20'000, 1).error().code, Errc::not_found);
}

TEST_P(StoreContract, RunEventsAreIdempotentAndTrackTheContiguousWatermark) {
  auto j = create("j");
  auto a = enrol("a");
  auto l = lease(j.id, a.id);
  auto r1 = store().append_run_events(l.run_id, l.fencing_token, {ev(1), ev(2), ev(3)}, ++now_);
  ASSERT_TRUE(r1.ok()) << r1.error().message;
  EXPECT_EQ(r1->accepted, 3);
  EXPECT_EQ(r1->duplicates, 0);
  EXPECT_EQ(r1->contiguous, 3);

  // A retried upload plus a gap: 2 and 3 are duplicates, 5 is stored but 4 is missing.
  auto r2 = store().append_run_events(l.run_id, l.fencing_token,
                                      {ev(2), ev(3), ev(5, "log", {{"text", "five"}}), ev(5)},
                                      ++now_);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->accepted, 1);
  EXPECT_EQ(r2->duplicates, 3);
  EXPECT_EQ(r2->contiguous, 3);
  EXPECT_EQ(store().get_run(l.run_id)->events_contiguous, 3);

  auto r3 = store().append_run_events(l.run_id, l.fencing_token, {ev(4)}, ++now_);
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(r3->contiguous, 5);
  EXPECT_EQ(store().get_run(l.run_id)->events_contiguous, 5);

  auto evs = store().run_events(l.run_id, 0, 100);
  ASSERT_EQ(evs.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(evs[i].seq, i + 1);
    EXPECT_EQ(evs[i].run_id, l.run_id);
    EXPECT_EQ(evs[i].job_id, j.id);
    EXPECT_EQ(evs[i].ts_ms, 1'700'000'100'000 + i + 1);
  }
  EXPECT_EQ(evs[4].data["text"], "five");  // the first copy wins
  EXPECT_EQ(store().run_events(l.run_id, 3, 100).size(), 2u);
  EXPECT_EQ(store().run_events(l.run_id, 0, 2).size(), 2u);
  // The job's own events (run_id 0) and its run's are both in job_events.
  EXPECT_EQ(store().job_events(j.id, 0, 100).size(), 3u + 5u);

  auto bad = store().append_run_events(l.run_id, l.fencing_token, {ev(0)}, ++now_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::invalid_argument);
}

// Event pages whatever the storage (PostgreSQL keeps a batch to a row): pages of every size
// across batches of several sizes, two runs and the jobs' own events interleaved, seqs out of
// order, a duplicate and a gap, and an `after` at either end of the range.
TEST_P(StoreContract, EventPagesOfEverySizeCrossBatchesWithoutLossOrRepeat) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  auto a = create("a");
  auto b = create("b");
  auto la = lease(a.id, enrol("x").id);
  auto lb = lease(b.id, enrol("y").id);
  auto put = [&](const Lease& l, std::vector<std::int64_t> seqs) {
    std::vector<Event> evs;
    for (auto q : seqs) evs.push_back(ev(q, "log", {{"seq", q}, {"run", l.run_id}}));
    auto r = store().append_run_events(l.run_id, l.fencing_token, evs, ++now_);
    ASSERT_TRUE(r.ok()) << r.error().message;
  };
  auto seqs_of = [](const std::vector<Event>& evs) {
    std::vector<std::int64_t> out;
    for (const auto& e : evs) out.push_back(e.seq);
    return out;
  };
  put(la, {3, 1, 2});
  put(lb, {1, 2, 3, 4, 5, 6, 7});
  store().append_job_event(a.id, event_type::sched_decision, {{"action", "note"}}, ++now_);
  put(la, {6});
  put(la, {4});  // 5 is missing: the run's watermark stays at 4
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(seqs_of(store().run_events(la.run_id, 0, 10)), (V{1, 2, 3, 4, 6}));
  EXPECT_EQ(seqs_of(store().run_events(la.run_id, 1, 2)), (V{2, 3}));
  EXPECT_EQ(seqs_of(store().run_events(la.run_id, 3, 1)), (V{4}));
  EXPECT_EQ(seqs_of(store().run_events(la.run_id, 4, 1)), (V{6}));  // past the gap
  put(la, {5, 2});  // 2 again: a duplicate, not stored twice
  put(lb, {8});

  const auto all = store().events_after(0, 1000);
  for (std::size_t i = 1; i < all.size(); ++i) ASSERT_LT(all[i - 1].id, all[i].id);
  std::map<std::int64_t, V> by_run;
  for (const auto& e : all)
    if (e.run_id != 0) {
      by_run[e.run_id].push_back(e.seq);
      EXPECT_EQ(e.data["seq"], e.seq);
      EXPECT_EQ(e.data["run"], e.run_id);
    }
  EXPECT_EQ(by_run[la.run_id], (V{3, 1, 2, 6, 4, 5}));  // in the order they were stored
  EXPECT_EQ(by_run[lb.run_id], (V{1, 2, 3, 4, 5, 6, 7, 8}));

  auto ids_of = [](const std::vector<Event>& evs) {
    std::vector<std::int64_t> out;
    for (const auto& e : evs) out.push_back(e.id);
    return out;
  };
  // Every page of `fetch(after, limit)` in turn, each at most `limit` long, the next after the
  // last one's `key` (an id or a seq), until an empty one.
  auto all_pages = [](int limit, auto fetch, auto key) {
    std::vector<Event> out;
    for (std::int64_t after = 0;;) {
      auto page = fetch(after, limit);
      EXPECT_LE(page.size(), static_cast<std::size_t>(limit));
      if (page.empty() || page.size() > static_cast<std::size_t>(limit)) break;
      after = key(page.back());
      out.insert(out.end(), page.begin(), page.end());
    }
    return out;
  };
  auto by_id = [](const Event& e) { return e.id; };
  for (int limit = 1; limit <= 5; ++limit) {
    SCOPED_TRACE("limit " + std::to_string(limit));
    EXPECT_EQ(ids_of(all_pages(limit, [&](auto after, int n) {
                return store().events_after(after, n);
              }, by_id)),
              ids_of(all));
    EXPECT_EQ(ids_of(all_pages(limit, [&](auto after, int n) {
                return store().job_events(a.id, after, n);
              }, by_id)),
              ids_of(store().job_events(a.id, 0, 1000)));
    EXPECT_EQ(seqs_of(all_pages(limit, [&](auto after, int n) {
                return store().run_events(la.run_id, after, n);
              }, [](const Event& e) { return e.seq; })),
              (V{1, 2, 3, 4, 5, 6}));
  }
  std::size_t of_a_expected = 0;
  for (const auto& e : all) of_a_expected += e.job_id == a.id;
  EXPECT_EQ(store().job_events(a.id, 0, 1000).size(), of_a_expected);
  std::size_t notes = 0, of_la = 0;
  for (const auto& e : store().job_events(a.id, 0, 1000)) {
    notes += e.type == event_type::sched_decision && e.data.value("action", "") == "note";
    of_la += e.run_id == la.run_id;
  }
  EXPECT_EQ(notes, 1u);
  EXPECT_EQ(of_la, 6u);
  // An `after` at either end of the range: all, or nothing, and no error.
  EXPECT_EQ(ids_of(store().events_after(std::numeric_limits<std::int64_t>::min(), 1000)),
            ids_of(all));
  EXPECT_TRUE(store().events_after(kMax, 10).empty());
  EXPECT_TRUE(store().job_events(a.id, kMax, 10).empty());
  EXPECT_TRUE(store().run_events(la.run_id, kMax, 10).empty());
  EXPECT_EQ(store().job_events(a.id, -5, 1000).size(), of_a_expected);
}

TEST_P(StoreContract, StageStartedEventsMoveTheJobForwardOnly) {
  auto j = create("j");
  auto a = enrol("a");
  auto l = lease(j.id, a.id);
  auto append = [&](Event e) {
    auto r = store().append_run_events(l.run_id, l.fencing_token, {std::move(e)}, ++now_);
    ASSERT_TRUE(r.ok()) << r.error().message;
  };
  append(stage_started(1, "fetch"));
  EXPECT_EQ(store().get_job(j.id)->state, JobState::building);
  EXPECT_EQ(store().get_run(l.run_id)->stage, "fetch");
  append(stage_started(2, "build"));
  EXPECT_EQ(store().get_job(j.id)->state, JobState::building);
  append(stage_started(3, "correctness"));
  EXPECT_EQ(store().get_job(j.id)->state, JobState::gating);
  append(stage_started(4, "benchmark"));
  EXPECT_EQ(store().get_job(j.id)->state, JobState::benchmarking);
  EXPECT_EQ(store().get_run(l.run_id)->stage, "benchmark");
  append(stage_started(5, "resources"));  // out of order: never back to gating
  EXPECT_EQ(store().get_job(j.id)->state, JobState::benchmarking);
  append(ev(6, event_type::stage_started, json{{"nostage", 1}}));  // malformed: ignored
  EXPECT_EQ(state_history(j.id),
            (std::vector<std::string>{"leased", "building", "gating", "benchmarking"}));
}

TEST_P(StoreContract, FinishRunGivesTheJobItsVerdictAndFreesTheAgent) {
  auto j = create("j");
  auto next = create("next");
  auto a = enrol("a");
  auto l = lease(j.id, a.id);
  auto r = store().finish_run(l.run_id, l.fencing_token,
                              verdict(RunOutcome::rejected, "do not merge: +6.1%", true), 900);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->outcome, RunOutcome::rejected);
  EXPECT_EQ(r->finished_ms, 900);
  ASSERT_TRUE(r->verdict);
  EXPECT_EQ(r->verdict->gate, "performance");
  EXPECT_TRUE(r->simulated);

  auto job = store().get_job(j.id);
  EXPECT_EQ(job->state, JobState::rejected);
  EXPECT_EQ(job->state_reason, "do not merge: +6.1%");
  EXPECT_EQ(job->current_run_id, 0);
  ASSERT_TRUE(job->verdict);
  EXPECT_EQ(job->verdict->outcome, RunOutcome::rejected);
  EXPECT_EQ(job->verdict->median_us, 696.0);
  EXPECT_TRUE(job->simulated);
  auto ag = store().get_agent(a.id);
  EXPECT_EQ(ag->state, AgentState::idle);
  EXPECT_EQ(ag->current_run_id, 0);
  EXPECT_TRUE(store().running_runs().empty());

  auto finished = store().finished_runs(10);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].id, l.run_id);
  // The job's last event says how it ended, once.
  auto events = store().job_events(j.id, 0, 100);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, "job.state");
  EXPECT_EQ(events.back().data.value("state", ""), "rejected");
  EXPECT_EQ(events.back().data.value("reason", ""), "do not merge: +6.1%");
  const auto ended = std::count_if(events.begin(), events.end(), [](const Event& e) {
    return e.type == "job.state" && e.data.value("state", "") == "rejected";
  });
  EXPECT_EQ(ended, 1);

  // Late or repeated results are refused; the terminal job does not change.
  auto twice = store().finish_run(l.run_id, l.fencing_token,
                                  verdict(RunOutcome::passed, "ok"), 901);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code, Errc::conflict);
  EXPECT_EQ(store().append_run_events(l.run_id, l.fencing_token, {ev(1)}, 902).error().code,
            Errc::conflict);
  EXPECT_EQ(store().set_job_state(j.id, JobState::queued, "again", 903).error().code,
            Errc::conflict);
  EXPECT_EQ(store().get_job(j.id)->state, JobState::rejected);
  EXPECT_EQ(store().job_events(j.id, 0, 100).size(), events.size()) << "a refused finish wrote";

  auto l2 = lease(next.id, a.id);  // the freed agent takes the next job
  EXPECT_GT(l2.fencing_token, l.fencing_token);
  auto ok = store().finish_run(l2.run_id, l2.fencing_token, verdict(RunOutcome::passed, ""), 950);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(store().get_job(next.id)->state, JobState::passed);
  EXPECT_FALSE(store().get_job(next.id)->simulated);
  auto page = store().finished_runs(1);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0].id, l2.run_id);
  EXPECT_EQ(store().finished_runs(10, l2.run_id).size(), 1u);
}

// A problem's kernel's comparisons with kfleet's PyTorch references are stored with its verdict
// (the verdict's JSON: no column of their own) and read back whole, on the job and the run.
TEST_P(StoreContract, AVerdictKeepsItsComparisonsWithPyTorch) {
  auto j = create("j");
  auto a = enrol("a");
  auto l = lease(j.id, a.id);
  Verdict v = verdict(RunOutcome::passed, "passed: median 696 µs\n1.15x eager [1.14, 1.16], torch.compile not timed (no triton) (mission)");
  BaselineComparison eager;
  eager.baseline = "eager";
  eager.speedup = 1.15;
  eager.ci_low = 1.14;
  eager.ci_high = 1.16;
  eager.reference_us = 800;
  eager.case_name = "mission";
  eager.key = {{"problem", "attention"}, {"case", "mission"}, {"gpu_class", "L4"}};
  eager.cached = true;
  BaselineComparison compile;
  compile.baseline = "compile";
  compile.case_name = "mission";
  compile.note = "no triton";
  v.versus = {eager, compile};
  ASSERT_TRUE(store().finish_run(l.run_id, l.fencing_token, v, 900).ok());
  for (const auto& got : {store().get_job(j.id)->verdict, store().get_run(l.run_id)->verdict}) {
    ASSERT_TRUE(got);
    ASSERT_EQ(got->versus.size(), 2u);
    EXPECT_EQ(to_json(got->versus[0]), to_json(eager));
    EXPECT_EQ(to_json(got->versus[1]), to_json(compile));
    EXPECT_EQ(got->reason, v.reason);
  }
}

TEST_P(StoreContract, FinishRunRefusesAVerdictThatIsNotAnOutcome) {
  auto j = create("j");
  auto a = enrol("a");
  auto l = lease(j.id, a.id);
  auto r = store().finish_run(l.run_id, l.fencing_token, verdict(RunOutcome::running, "?"), 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_EQ(store().get_run(l.run_id)->outcome, RunOutcome::running);
  EXPECT_EQ(store().finish_run(l.run_id, l.fencing_token + 7, verdict(RunOutcome::passed, ""), 2)
                .error()
                .code,
            Errc::conflict);
}

}  // namespace kfleet::store::testing
