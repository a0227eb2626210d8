// The store contract, part 3: baselines with their history, and fleet regression runs.
#include "store_contract.hpp"

namespace kfleet::store::testing {

namespace {

Baseline baseline(const std::string& kernel, const std::string& cls, double median,
                  bool simulated = false, std::int64_t run = 1) {
  Baseline b;
  b.kernel = kernel;
  b.case_name = "mission";
  b.gpu_class = cls;
  b.run_id = run;
  b.job_id = run;
  b.median_us = median;
  b.samples_us = {median - 1, median, median + 1};
  b.simulated = simulated;
  b.reason = "test";
  return b;
}

}  // namespace

TEST_P(StoreContract, BaselineSetThenSupersededKeepsHistory) {
  auto first = store().set_baseline(baseline("fa", "L4", 656.5), 1000);
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto cur = store().current_baseline("fa", "mission", "L4", false);
  ASSERT_TRUE(cur);
  EXPECT_DOUBLE_EQ(cur->median_us, 656.5);
  EXPECT_EQ(cur->samples_us.size(), 3u);
  EXPECT_EQ(cur->set_ms, 1000);
  EXPECT_EQ(cur->superseded_ms, 0);

  ASSERT_TRUE(store().set_baseline(baseline("fa", "L4", 640.25, false, 2), 2000).ok());
  cur = store().current_baseline("fa", "mission", "L4", false);
  ASSERT_TRUE(cur);
  EXPECT_DOUBLE_EQ(cur->median_us, 640.25);
  EXPECT_EQ(cur->run_id, 2);

  auto hist = store().baseline_history("fa");
  ASSERT_EQ(hist.size(), 2u);
  EXPECT_EQ(hist[0].run_id, 2);           // newest first
  EXPECT_EQ(hist[0].superseded_ms, 0);
  EXPECT_EQ(hist[1].superseded_ms, 2000);  // the old one says when it was replaced
  EXPECT_EQ(hist[1].reason, "test");
}

TEST_P(StoreContract, BaselineRecordsWhoSetIt) {
  auto b = baseline("fa", "L4", 656.5);
  b.set_by = "sam";
  auto set = store().set_baseline(b, 1000);
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->set_by, "sam");
  EXPECT_EQ(store().current_baseline("fa", "mission", "L4", false)->set_by, "sam");
  auto kept = baseline("fa", "L4", 640.25, false, 2);
  kept.set_by = "alice@lab.example";
  ASSERT_TRUE(store().set_baseline(kept, 2000).ok());
  auto unknown = baseline("fa", "H100", 300, false, 3);  // nobody named: stays ""
  ASSERT_TRUE(store().set_baseline(unknown, 3000).ok());
  auto hist = store().baseline_history("fa");
  ASSERT_EQ(hist.size(), 3u);
  EXPECT_EQ(hist[0].set_by, "");
  EXPECT_EQ(hist[1].set_by, "alice@lab.example");
  EXPECT_EQ(hist[2].set_by, "sam");  // superseded, still says who set it
  EXPECT_EQ(hist[2].superseded_ms, 2000);
}

TEST_P(StoreContract, BaselinesAreKeyedByClassCaseAndSimulation) {
  ASSERT_TRUE(store().set_baseline(baseline("fa", "L4", 100, /*simulated=*/true), 1).ok());
  // A simulated baseline is not a real one, and another class or case has none.
  EXPECT_FALSE(store().current_baseline("fa", "mission", "L4", false));
  EXPECT_TRUE(store().current_baseline("fa", "mission", "L4", true));
  EXPECT_FALSE(store().current_baseline("fa", "mission", "H100", true));
  EXPECT_FALSE(store().current_baseline("fa", "small", "L4", true));
  ASSERT_TRUE(store().set_baseline(baseline("fa", "L4", 120, false), 2).ok());
  EXPECT_DOUBLE_EQ(store().current_baseline("fa", "mission", "L4", true)->median_us, 100);
  EXPECT_DOUBLE_EQ(store().current_baseline("fa", "mission", "L4", false)->median_us, 120);
  EXPECT_EQ(store().baseline_history("").size(), 2u);
  EXPECT_TRUE(store().baseline_history("other").empty());
}

TEST_P(StoreContract, BaselineWithoutTimingOrKernelIsRefused) {
  auto b = baseline("fa", "L4", 0);
  auto r = store().set_baseline(b, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  b = baseline("", "L4", 10);
  EXPECT_FALSE(store().set_baseline(b, 1).ok());
  EXPECT_TRUE(store().baseline_history("").empty());
}

TEST_P(StoreContract, RegressionRunLinksJobsAndStoresCells) {
  auto reg = store().create_regression("nightly", {{"suite", "nightly"}}, 500);
  ASSERT_TRUE(reg.ok()) << reg.error().message;
  EXPECT_EQ(reg->state, "running");
  auto j1 = create("k1");
  auto j2 = create("k2");
  ASSERT_TRUE(store().add_regression_job({reg->id, j1.id, "k1", "L4"}).ok());
  ASSERT_TRUE(store().add_regression_job({reg->id, j2.id, "k2", "H100"}).ok());
  auto unknown = store().add_regression_job({reg->id + 100, j1.id, "k1", "L4"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, Errc::not_found);

  auto jobs = store().regression_jobs(reg->id);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].job_id, j1.id);
  EXPECT_EQ(jobs[1].gpu_class, "H100");
  EXPECT_EQ(store().regression_of_job(j2.id), reg->id);
  EXPECT_EQ(store().regression_of_job(j2.id + 1000), 0);

  nlohmann::json cells = {{{"kernel", "k1"}, {"gpu_class", "L4"}, {"verdict", "regressed"}}};
  auto up = store().update_regression(reg->id, "done", cells, 900);
  ASSERT_TRUE(up.ok()) << up.error().message;
  auto got = store().get_regression(reg->id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->state, "done");
  EXPECT_EQ(got->cells, cells);
  EXPECT_EQ(got->created_ms, 500);
  EXPECT_EQ(got->updated_ms, 900);
  EXPECT_EQ(got->spec["suite"], "nightly");
  EXPECT_FALSE(store().update_regression(reg->id + 100, "done", cells, 1).ok());

  ASSERT_TRUE(store().create_regression("weekly", nlohmann::json::object(), 600).ok());
  auto all = store().list_regressions(10);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].suite, "weekly");
  EXPECT_EQ(store().list_regressions(1).size(), 1u);
  EXPECT_FALSE(store().create_regression("", {}, 1).ok());
}

}  // namespace kfleet::store::testing
