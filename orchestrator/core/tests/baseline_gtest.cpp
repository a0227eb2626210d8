// compare_to: baseline resolution: a simulated baseline never reaches a real agent.
#include <gtest/gtest.h>

#include "kfleet/core/fleet.hpp"
#include "plane.hpp"

namespace kfleet::core {
namespace {

store::AgentRecord agent(bool simulated) {
  store::AgentRecord a;
  a.backend = simulated ? "simulated" : "cuda";
  GpuInfo g;
  g.gpu_class = "L4";
  g.simulated = simulated;
  a.gpus = {g};
  return a;
}

store::JobRecord job() {
  store::JobRecord j;
  j.name = "fp8-sdpa/stage3";
  j.campaign = "fp8-sdpa";
  j.spec = {{"gates", {{"performance", {{"case", "mission"}, {"compare_to", "baseline"}}}}}};
  return j;
}

store::Baseline baseline(bool simulated, double us) {
  store::Baseline b;
  b.kernel = "fp8-sdpa";
  b.case_name = "mission";
  b.gpu_class = "L4";
  b.run_id = simulated ? 1 : 2;
  b.median_us = us;
  b.samples_us = {us, us};
  b.simulated = simulated;
  return b;
}

TEST(Baseline, KernelIsTheCampaignElseTheName) {
  auto j = job();
  EXPECT_EQ(kernel_key(j), "fp8-sdpa");
  j.campaign.clear();
  EXPECT_EQ(kernel_key(j), "fp8-sdpa/stage3");
  EXPECT_EQ(perf_case(j), "mission");
}

TEST(Baseline, SimulatedBaselineIsNeverHandedToARealAgent) {
  auto st = store::open_sqlite_store({":memory:"});
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE((*st)->set_baseline(baseline(true, 656), 1).ok());
  auto real = resolve_baseline(**st, job(), agent(false));
  EXPECT_EQ(real["kind"], "") << real.dump();
  auto sim = resolve_baseline(**st, job(), agent(true));
  EXPECT_EQ(sim["kind"], "baseline") << sim.dump();
  EXPECT_EQ(sim["median_us"], 656);
  EXPECT_TRUE(sim["simulated"].get<bool>());
  EXPECT_EQ(sim["samples_us"].size(), 2u);

  // With a real baseline too, the real agent gets it and the simulated one keeps its own.
  ASSERT_TRUE((*st)->set_baseline(baseline(false, 640), 2).ok());
  real = resolve_baseline(**st, job(), agent(false));
  EXPECT_EQ(real["kind"], "baseline");
  EXPECT_EQ(real["median_us"], 640);
  EXPECT_FALSE(real["simulated"].get<bool>());
  EXPECT_EQ(resolve_baseline(**st, job(), agent(true))["median_us"], 656);
}

TEST(Baseline, OtherClassOrCaseHasNone) {
  auto st = store::open_sqlite_store({":memory:"});
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE((*st)->set_baseline(baseline(false, 640), 1).ok());
  auto a = agent(false);
  a.gpus[0].gpu_class = "H100";
  EXPECT_EQ(resolve_baseline(**st, job(), a)["kind"], "");
  auto j = job();
  j.spec["gates"]["performance"]["case"] = "small";
  EXPECT_EQ(resolve_baseline(**st, j, agent(false))["kind"], "");
}

// Who set a baseline is a field: the user who ran `kfleet baseline set`, or for a campaign's
// kept win the user who submitted the campaign's variant. A cancel records its user too.
TEST(Baseline, SetByIsTheUserOrTheKeptWinsSubmitter) {
  test::Plane p;
  const auto agent = p.enrol_agent("a", "L4", /*simulated=*/true);
  auto submit = [&](const std::string& name, const std::string& user) {
    return p.submit("name: " + name + "\ncampaign: fa\nparent: fa/root\ntarget: {gpu: L4}\n"
                    "kernel: {family: attention, language: cuda, sources: [k.cu]}\n", user);
  };
  const auto win = submit("fa/step1", "carol");
  Verdict v;
  v.outcome = RunOutcome::passed;
  v.perf = "improved";
  v.median_us = 640;
  v.simulated = true;
  const auto lease = p.run_to_verdict(win, agent.agent_id, v);
  ASSERT_TRUE(lease.ok());
  auto kept = p.st->current_baseline("fa", "", "L4", true);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->set_by, "carol");
  EXPECT_EQ(kept->reason, "kept win of campaign fa (job " + std::to_string(win) + ")");
  EXPECT_EQ(to_json(*kept)["set_by"], "carol");

  auto by_hand = set_baseline_from_run(*p.cp, lease->run_id, "kfleet baseline set", "sam");
  ASSERT_TRUE(by_hand.ok()) << by_hand.error().message;
  EXPECT_EQ(p.st->current_baseline("fa", "", "L4", true)->set_by, "sam");
  EXPECT_EQ(p.st->baseline_history("fa").back().set_by, "carol");

  const auto other = submit("fa/step2", "carol");
  auto c = p.cp->cancel(other, "sam");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->cancelled_by, "sam");
  EXPECT_EQ(p.st->get_job(other)->cancelled_by, "sam");
  EXPECT_EQ(p.st->get_job(win)->cancelled_by, "");
}


// A stored baseline carries the timing mode its run recorded; a job timed in the other mode is
// not compared with it, and the note says why (the agent puts it in the verdict).
TEST(Baseline, AReplayedJobIsNeverComparedWithAnInProcessBaseline) {
  test::Plane p;
  const auto a = p.enrol_agent("a", "L4", /*simulated=*/false);
  const auto win = p.submit("name: fa/step1\ncampaign: fa\nparent: fa/root\ntarget: {gpu: L4}\n"
                            "kernel: {family: attention, language: cuda, sources: [k.cu], "
                            "params: {timing: in_process}}\n", "carol");
  ASSERT_NE(win, 0);
  Verdict v;
  v.outcome = RunOutcome::passed;
  v.perf = "improved";
  v.median_us = 640;
  v.metrics["timing_mode"] = "in_process";  // what the agent's verdict records
  ASSERT_TRUE(p.run_to_verdict(win, a.agent_id, v).ok());
  auto agent_rec = p.st->get_agent(a.agent_id);
  ASSERT_TRUE(agent_rec);

  auto replayed = job();
  replayed.campaign = "fa";
  replayed.spec["gates"]["performance"].erase("case");
  const auto stored = resolve_baseline(*p.st, replayed, *agent_rec);
  ASSERT_EQ(stored["kind"], "baseline") << stored.dump();
  EXPECT_EQ(stored["timing_mode"], "in_process");
  EXPECT_EQ(spec_timing_mode(replayed.spec), "replay");
  const auto refused = refuse_other_timing_mode(stored, spec_timing_mode(replayed.spec));
  EXPECT_EQ(refused["kind"], "") << refused.dump();
  EXPECT_FALSE(refused.contains("median_us"));
  EXPECT_NE(refused["note"].get<std::string>().find("timed in-process"), std::string::npos)
      << refused.dump();

  // The same mode compares; so does a baseline whose mode was not recorded.
  auto in_process = replayed;
  in_process.spec["kernel"] = {{"params", {{"timing", "in_process"}}}};
  EXPECT_EQ(refuse_other_timing_mode(stored, spec_timing_mode(in_process.spec))["kind"], "baseline");
  auto unrecorded = stored;
  unrecorded["timing_mode"] = "";
  EXPECT_EQ(refuse_other_timing_mode(unrecorded, "replay")["kind"], "baseline");
  // And the reverse: an in-process job is not compared with a replayed baseline.
  auto replay_base = stored;
  replay_base["timing_mode"] = "replay";
  EXPECT_EQ(refuse_other_timing_mode(replay_base, "in_process")["kind"], "");
}

}  // namespace
}  // namespace kfleet::core
