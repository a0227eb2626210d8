// compare_to: baseline resolution: a simulated baseline never reaches a real agent.
#include <gtest/gtest.h>

#include "kfleet/core/fleet.hpp"

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

}  // namespace
}  // namespace kfleet::core
