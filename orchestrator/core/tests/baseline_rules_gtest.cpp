// The rules a baseline is made and read by, one at a time: which case and timing mode a job's
// spec names (only a string case of a performance map counts), what a baseline says of itself,
// where `kfleet baseline set` takes a run's samples from, which runs can be one and when a result
// is marked simulated, and which finished runs set one by themselves (a campaign's kept win; a
// regression run's first result).
#include <gtest/gtest.h>

#include "kfleet/core/fleet.hpp"
#include "plane.hpp"

namespace kfleet::core {
namespace {

// (The br_ names: the core tests build in unity batches, where another file's helpers share
// this anonymous namespace.)
store::JobRecord br_job(nlohmann::json spec) {
  store::JobRecord j;
  j.name = "fa/step1";
  j.spec = std::move(spec);
  return j;
}

TEST(BaselineRules, TheCaseIsAStringCaseOfAPerformanceMap) {
  EXPECT_EQ(perf_case(br_job(nlohmann::json::object())), "");
  EXPECT_EQ(perf_case(br_job({{"gates", "fast"}})), "");
  EXPECT_EQ(perf_case(br_job({{"gates", {{"correctness", nlohmann::json::object()}}}})), "");
  EXPECT_EQ(perf_case(br_job({{"gates", {{"performance", "mission"}}}})), "");
  EXPECT_EQ(perf_case(br_job({{"gates", {{"performance", {{"case", 3}}}}}})), "");
  EXPECT_EQ(perf_case(br_job({{"gates", {{"performance", {{"case_name", "big"}}}}}})), "big");
  // A case that is no string is passed over for the other spelling, not read as one.
  EXPECT_EQ(perf_case(br_job({{"gates", {{"performance", {{"case", 3}, {"case_name", "big"}}}}}})), "big");
  EXPECT_EQ(perf_case(br_job({{"gates", {{"performance", {{"case", "small"}, {"case_name", "big"}}}}}})), "small");
}

TEST(BaselineRules, ATimingModeIsReadOnlyFromItsOwnField) {
  Verdict v;
  EXPECT_EQ(verdict_timing_mode(v), "");
  v.metrics["timing_mode"] = 3;
  EXPECT_EQ(verdict_timing_mode(v), "") << "a number is no mode";
  v.metrics["timing_mode"] = "in_process";
  EXPECT_EQ(verdict_timing_mode(v), "in_process");

  EXPECT_EQ(spec_timing_mode(nlohmann::json::object()), "replay");
  EXPECT_EQ(spec_timing_mode({{"kernel", "k.cu"}}), "replay");
  EXPECT_EQ(spec_timing_mode({{"kernel", nlohmann::json::object()}}), "replay");
  EXPECT_EQ(spec_timing_mode({{"kernel", {{"params", "in_process"}}}}), "replay");
  EXPECT_EQ(spec_timing_mode({{"kernel", {{"params", {{"timing", "replay"}}}}}}), "replay");
  EXPECT_EQ(spec_timing_mode({{"kernel", {{"params", {{"timing", "in_process"}}}}}}), "in_process");
}

TEST(BaselineRules, AModeMismatchSaysWhichBaselineToSetInstead) {
  const nlohmann::json in_process = {
      {"kind", "baseline"}, {"label", "baseline fa on L4 (run 7)"}, {"timing_mode", "in_process"}};
  const auto note = refuse_other_timing_mode(in_process, "replay")["note"].get<std::string>();
  EXPECT_EQ(note.rfind("baseline fa on L4 (run 7) was timed in-process", 0), 0u) << note;
  EXPECT_NE(note.find("this job replayed"), std::string::npos) << note;
  EXPECT_NE(note.find("; set a baseline timed replayed (kfleet baseline set RUN)"), std::string::npos) << note;
  auto replayed = in_process;
  replayed["timing_mode"] = "replay";
  replayed.erase("label");
  const auto back = refuse_other_timing_mode(replayed, "in_process")["note"].get<std::string>();
  EXPECT_EQ(back.rfind("the baseline was timed replayed", 0), 0u) << back;
  EXPECT_NE(back.find("; set a baseline timed in-process (kfleet baseline set RUN)"), std::string::npos) << back;
  // No baseline to compare with: nothing to refuse.
  const nlohmann::json none = {{"kind", ""}, {"note", "no baseline yet"}, {"timing_mode", "in_process"}};
  EXPECT_EQ(refuse_other_timing_mode(none, "replay"), none);
}

TEST(BaselineRules, ABaselineSaysWhetherItWasSuperseded) {
  store::Baseline b;
  b.set_ms = 1'000;
  auto j = to_json(b);
  EXPECT_EQ(j["superseded"], false);
  EXPECT_EQ(j["superseded_at"], "");
  b.superseded_ms = 2'000;
  j = to_json(b);
  EXPECT_EQ(j["superseded"], true);
  EXPECT_EQ(j["superseded_at"], format_iso8601(2'000));
}

TEST(BaselineRules, ABaselineWithoutSamplesOffersNone) {
  auto st = store::open_sqlite_store({":memory:"});
  ASSERT_TRUE(st.ok());
  store::Baseline b;
  b.kernel = "fa/step1";
  b.gpu_class = "L4";
  b.run_id = 5;
  b.median_us = 10;
  ASSERT_TRUE((*st)->set_baseline(b, 1).ok());
  store::AgentRecord a;
  a.backend = "cuda";
  GpuInfo g;
  g.gpu_class = "L4";
  a.gpus = {g};
  const auto r = resolve_baseline(**st, br_job(nlohmann::json::object()), a);
  ASSERT_EQ(r["kind"], "baseline") << r.dump();
  EXPECT_FALSE(r.contains("samples_us")) << r.dump();
  EXPECT_FALSE(r.contains("timing_mode")) << "its run is not in the store: " << r.dump();
}

// A control plane with one real L4 agent, and jobs run to a verdict on it.
struct BrPlane : test::Plane {
  std::int64_t agent = enrol_agent("a", "L4", /*simulated=*/false).agent_id;

  std::int64_t job(const std::string& head) {
    return submit(head + "target: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n", "carol");
  }
  // Leases `id`, stores `events` in its run (data objects, in order), finishes it with `v`.
  std::int64_t run(std::int64_t id, const Verdict& v, const std::vector<nlohmann::json>& events = {}) {
    auto lease = st->grant_lease(id, agent, 60'000, clock->now_ms());
    EXPECT_TRUE(lease.ok()) << lease.error().message;
    if (!lease) return 0;
    std::vector<Event> evs;
    for (const auto& d : events) {
      Event e;
      e.run_id = lease->run_id;
      e.seq = static_cast<std::int64_t>(evs.size()) + 1;
      e.ts_ms = clock->now_ms();
      e.type = "bench.result";
      e.data = d;
      evs.push_back(std::move(e));
    }
    if (!evs.empty()) {
      EXPECT_TRUE(st->append_run_events(lease->run_id, lease->fencing_token, evs, clock->now_ms()).ok());
    }
    auto f = cp->finish(agent, lease->run_id, lease->fencing_token, v);
    EXPECT_TRUE(f.ok()) << f.error().message;
    return lease->run_id;
  }
};

Verdict br_verdict(RunOutcome o, const std::string& perf, std::optional<double> median) {
  return test::verdict_of(o, o == RunOutcome::rejected ? "correctness" : "", perf, median);
}

// The last event whose samples_us is a non-empty list; else the verdict's metrics.
TEST(BaselineRules, ARunsSamplesAreItsLastEventWithAListOfThem) {
  BrPlane p;
  auto v = br_verdict(RunOutcome::passed, "", 10);
  v.metrics["samples_us"] = {7.0, 7.0, 7.0};
  const auto from_events = p.run(p.job("name: a\n"), v,
                                 {{{"samples_us", {1.0, 2.0}}},
                                  {{"samples_us", {3.0}}},
                                  {{"samples_us", nlohmann::json::array()}},
                                  {{"samples_us", "4 5"}},
                                  {{"other", {9.0}}}});
  auto b = set_baseline_from_run(*p.cp, from_events, "kfleet baseline set", "sam");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->samples_us, nlohmann::json({3.0}));

  const auto from_metrics = p.run(p.job("name: b\n"), v, {{{"samples_us", 4.0}}});
  b = set_baseline_from_run(*p.cp, from_metrics, "kfleet baseline set", "sam");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->samples_us, nlohmann::json({7.0, 7.0, 7.0}));

  auto no_list = v;
  no_list.metrics["samples_us"] = "7 7 7";
  const auto none = p.run(p.job("name: c\n"), no_list);
  b = set_baseline_from_run(*p.cp, none, "kfleet baseline set", "sam");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->samples_us, nlohmann::json::array());
}

TEST(BaselineRules, OnlyAFinishedTimedRunIsABaselineAndItKeepsItsSimulatedMark) {
  BrPlane p;
  auto refused = [&](std::int64_t run, const std::string& words) {
    auto b = set_baseline_from_run(*p.cp, run, "kfleet baseline set", "sam");
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.error().message.find(words), std::string::npos) << b.error().message;
  };
  refused(99, "no run 99");
  const auto running = p.st->grant_lease(p.job("name: a\n"), p.agent, 60'000, p.clock->now_ms());
  ASSERT_TRUE(running.ok());
  refused(running->run_id, "has no timing result");
  ASSERT_TRUE(p.cp->finish(p.agent, running->run_id, running->fencing_token,
                           br_verdict(RunOutcome::rejected, "", std::nullopt)).ok());
  refused(running->run_id, "has no timing result");
  refused(p.run(p.job("name: b\n"), br_verdict(RunOutcome::error, "", 10)), "ended in error");

  // A real agent's run whose verdict says simulated makes a simulated baseline.
  auto claims = br_verdict(RunOutcome::passed, "", 10);
  claims.simulated = true;
  auto b = set_baseline_from_run(*p.cp, p.run(p.job("name: c\n"), claims), "kfleet baseline set", "sam");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_TRUE(b->simulated);
  b = set_baseline_from_run(*p.cp, p.run(p.job("name: d\n"), br_verdict(RunOutcome::passed, "", 10)),
                            "kfleet baseline set", "sam");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_FALSE(b->simulated);
}

// Only a passed, improved variant of a campaign (a job with a campaign and a parent) is a kept
// win that becomes the baseline.
TEST(BaselineRules, OnlyAnImprovedVariantOfACampaignSetsTheBaselineByItself) {
  BrPlane p;
  const auto improved = br_verdict(RunOutcome::passed, "improved", 10);
  auto rejected_improved = br_verdict(RunOutcome::rejected, "improved", 10);
  p.run(p.job("name: solo\n"), improved);                         // no campaign
  p.run(p.job("name: fa/root\ncampaign: fa\n"), improved);        // a campaign's root
  p.run(p.job("name: fa/same\ncampaign: fa\nparent: fa/root\n"),  // not improved
        br_verdict(RunOutcome::passed, "same", 10));
  p.run(p.job("name: fa/bad\ncampaign: fa\nparent: fa/root\n"), rejected_improved);
  EXPECT_FALSE(p.st->current_baseline("solo", "", "L4", false));
  EXPECT_FALSE(p.st->current_baseline("fa", "", "L4", false));
  p.run(p.job("name: fa/win\ncampaign: fa\nparent: fa/root\n"), improved);
  const auto kept = p.st->current_baseline("fa", "", "L4", false);
  ASSERT_TRUE(kept);
  EXPECT_NE(kept->reason.find("kept win of campaign fa"), std::string::npos) << kept->reason;
}

}  // namespace
}  // namespace kfleet::core
