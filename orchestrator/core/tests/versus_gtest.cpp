// A problem's kernel against kfleet's PyTorch references in kfleetd: a simulated agent's
// comparisons are simulated whatever it says, a campaign carries each job's comparisons and its
// fast_p, and a regression run's fast_p counts its cells. The control plane itself, no HTTP.
#include <gtest/gtest.h>

#include "kfleet/core/fleet.hpp"
#include "plane.hpp"

namespace kfleet::core {
namespace {

BaselineComparison cmp(const char* baseline, std::optional<double> speedup) {
  BaselineComparison c;
  c.baseline = baseline;
  c.speedup = speedup;
  if (speedup) {
    c.ci_low = *speedup - 0.01;
    c.ci_high = *speedup + 0.01;
  } else {
    c.note = "kfleet's PyTorch torch.compile reference could not be timed: refused";
  }
  c.case_name = "mission";
  c.key = {{"problem", "attention"}, {"case", "mission"}, {"gpu_class", "L4"}};
  return c;
}

struct VsPlane : test::Plane {
  std::int64_t agent;
  explicit VsPlane(bool simulated) : agent(enrol_agent("a", "L4", simulated).agent_id) {}

  std::int64_t submit(const std::string& name, const std::string& parent, const std::string& family) {
    return test::Plane::submit(
        "name: " + name + "\ncampaign: vs\n" + (parent.empty() ? "" : "parent: " + parent + "\n") +
        "target: {gpu: L4}\nkernel:\n  family: " + family + "\n  language: cuda\n  sources: [k.cu]\n" +
        (family == "custom" ? "  steps: {build: make, test: ./t, bench: ./b}\n" : "") +
        "gates:\n  correctness:\n    cases: [{name: mission, shape: {B: 1}, seeds: [0]}]\n"
        "    tolerance: {max_abs: 0.01}\n  performance: {case: mission}\n",
        "carol");
  }

  // Leases the next job to the agent and finishes it with `v`.
  void run(std::int64_t job, Verdict v) {
    auto got = wait_offer(agent);
    ASSERT_TRUE(got && got->lease.job_id == job);
    auto r = cp->finish(agent, got->lease.run_id, got->lease.fencing_token, v);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
};

Verdict verdict(RunOutcome o, const std::string& gate, std::vector<BaselineComparison> versus) {
  Verdict v = test::verdict_of(
      o, gate, o == RunOutcome::passed ? "improved" : gate == "performance" ? "regressed" : "", 100, "r");
  v.versus = std::move(versus);
  return v;
}

TEST(Versus, ASimulatedAgentsComparisonsAreSimulatedWhateverItSays) {
  VsPlane p(/*simulated=*/true);
  const auto j = p.submit("vs/root", "", "attention");
  p.run(j, verdict(RunOutcome::passed, "", {cmp("eager", 1.2), cmp("compile", 0.9)}));
  auto job = p.st->get_job(j);
  ASSERT_TRUE(job && job->verdict);
  ASSERT_EQ(job->verdict->versus.size(), 2u);
  for (const auto& c : job->verdict->versus) EXPECT_TRUE(c.simulated) << to_json(c).dump();
}

// A campaign: each entry carries its comparisons; fast_p counts every finished job on a
// problem's kernel (not a custom job's, not a cancelled one) and only the correct ones as fast.
TEST(Versus, ACampaignCarriesItsComparisonsAndFastP) {
  VsPlane p(/*simulated=*/false);
  const auto root = p.submit("vs/root", "", "attention");
  p.run(root, verdict(RunOutcome::passed, "", {cmp("eager", 1.6), cmp("compile", 1.2)}));
  const auto slower = p.submit("vs/slower", "vs/root", "attention");
  p.run(slower, verdict(RunOutcome::rejected, "performance", {cmp("eager", 1.1), cmp("compile", std::nullopt)}));
  const auto wrong = p.submit("vs/wrong", "vs/root", "attention");
  p.run(wrong, verdict(RunOutcome::rejected, "correctness", {}));
  const auto custom = p.submit("vs/custom", "", "custom");
  p.run(custom, verdict(RunOutcome::passed, "", {}));
  const auto cancelled = p.submit("vs/cancelled", "vs/root", "attention");
  ASSERT_TRUE(p.cp->cancel(cancelled, "carol").ok());

  auto c = campaign_view(*p.st, "vs");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto& best = (*c)["current_best"];
  ASSERT_EQ(best["versus"].size(), 2u) << best.dump();
  EXPECT_EQ(best["versus"][0]["speedup"], 1.6);
  const auto& f = (*c)["fast_p"];
  EXPECT_EQ(f["kernels"], 3) << f.dump();
  EXPECT_NE(f["of"].get<std::string>().find("not cancelled"), std::string::npos);
  const auto& eager = f["baselines"][0];
  EXPECT_EQ(eager["baseline"], "eager");
  EXPECT_EQ(eager["timed"], 2);
  EXPECT_EQ(eager["p"][0]["fast"], 2);  // 1.6 and 1.1: a performance rejection is still correct
  EXPECT_EQ(eager["p"][1]["fast"], 1);  // 1.6
  const auto& compile = f["baselines"][1];
  EXPECT_EQ(compile["timed"], 1);
  EXPECT_EQ(compile["p"][0]["fast"], 1);
  EXPECT_FALSE(f["simulated"].get<bool>());
}

TEST(Versus, ARegressionRunsFastPCountsFinishedCellsOfAProblemsKernel) {
  auto cell = [](bool problem, const std::string& verdict, bool correct, nlohmann::json versus) {
    nlohmann::json c = {{"problem_kernel", problem}, {"verdict", verdict}, {"correct", correct}, {"simulated", true}};
    if (!versus.is_null()) c["versus"] = versus;
    return c;
  };
  const nlohmann::json fast = {to_json(cmp("eager", 1.7)), to_json(cmp("compile", 1.1))};
  const nlohmann::json slow = {to_json(cmp("eager", 0.8)), to_json(cmp("compile", 0.5))};
  const nlohmann::json cells = {cell(true, "same", true, fast),          cell(true, "regressed", true, slow),
                                cell(true, "error", false, nullptr),     cell(true, "pending", false, nullptr),
                                cell(false, "improved", true, nullptr)};
  const auto f = regression_fast_p(cells);
  EXPECT_EQ(f["kernels"], 3);  // not the pending cell, nor the one that is no problem's
  EXPECT_TRUE(f["simulated"].get<bool>());
  EXPECT_EQ(f["baselines"][0]["p"][0]["fast"], 1);
  EXPECT_EQ(f["baselines"][0]["p"][1]["fast"], 1);
  EXPECT_EQ(f["baselines"][1]["p"][0]["fast"], 1);
  EXPECT_EQ(f["baselines"][1]["p"][1]["fast"], 0);
  EXPECT_EQ(regression_fast_p(nlohmann::json::array())["kernels"], 0);
}

}  // namespace
}  // namespace kfleet::core
