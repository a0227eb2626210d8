// Fleet regression runs in the control plane, no HTTP: a suite becomes one job per (job, GPU
// class), each retargeted and checked before anything is created; each cell's verdict follows
// its job; the change-point history reads only this kernel on this class in earlier runs of the
// same suite; and a standby computes the matrix without writing it.
#include <gtest/gtest.h>

#include <set>

#include "kfleet/core/fleet.hpp"
#include "plane.hpp"

namespace kfleet::core {
namespace {

// (The reg_ names: the core tests build in unity batches, where another file's helpers share
// this anonymous namespace.)

// A job of the suite: its own target, campaign parent and comparison, which a regression run
// must replace with the cell's class, the suite's regions and the stored baseline.
std::string reg_job_yaml(const std::string& name) {
  return "name: " + name +
         "\nparent: some/ancestor\ntarget: {gpu: A100, regions: [ap-south-1]}\n"
         "kernel:\n  family: attention\n  language: cuda\n  sources: [k.cu]\n"
         "gates:\n  correctness:\n    cases: [{name: mission, shape: {B: 1}, seeds: [0]}]\n"
         "    tolerance: {max_abs: 0.01}\n"
         "  performance: {case: mission, compare_to: parent, threshold_pct: 2}\n";
}

nlohmann::json reg_request(const std::string& suite_yaml, const std::vector<std::string>& names) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& n : names)
    jobs.push_back(
        {{"source_name", n + ".yaml"}, {"spec_yaml", reg_job_yaml(n)}, {"bundle", bundle_to_json(test::k_cu())}});
  return {{"suite_yaml", suite_yaml}, {"source_name", "nightly.yaml"}, {"jobs", jobs}};
}

const char* kRegSuite = "suite: nightly\njobs: [fa.yaml, sdpa.yaml]\non: {gpus: [L4, H100], regions: [eu-west-1]}\n";

// Its reason says which gate or comparison it was.
Verdict reg_verdict(RunOutcome o, const std::string& gate, const std::string& perf, std::optional<double> median) {
  return test::verdict_of(o, gate, perf, median, "because " + (perf.empty() ? gate : perf));
}

struct RegPlane : test::Plane {
  std::int64_t l4 = enrol_agent("l4", "L4", false).agent_id;
  std::int64_t h100 = enrol_agent("h100", "H100", false).agent_id;

  explicit RegPlane(Config cfg = {}) : test::Plane(std::move(cfg)) {}

  store::RegressionRecord start(const nlohmann::json& req) {
    auto r = start_regression(*cp, req, "alice");
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : store::RegressionRecord{};
  }
  nlohmann::json view(std::int64_t id) {
    auto v = regression_view(*cp, id);
    EXPECT_TRUE(v.ok()) << (v.ok() ? "" : v.error().message);
    return v.ok() ? *v : nlohmann::json::object();
  }
  // The cell of `kernel` on `cls` in `view`.
  static nlohmann::json cell(const nlohmann::json& view, const std::string& kernel, const std::string& cls) {
    for (const auto& c : view["cells"])
      if (c["kernel"] == kernel && c["gpu_class"] == cls) return c;
    ADD_FAILURE() << "no cell " << kernel << " on " << cls << " in " << view.dump();
    return nlohmann::json::object();
  }
  std::int64_t agent_for(const std::string& cls) const { return cls == "L4" ? l4 : h100; }
  void finish(const nlohmann::json& c, const Verdict& v) {
    EXPECT_TRUE(run_to_verdict(c["job_id"].get<std::int64_t>(), agent_for(c["gpu_class"]), v).ok());
  }
};

TEST(Regressions, EachJobRunsOnEachClassRetargetedToTheSuitesRegionsAndBaseline) {
  RegPlane p;
  const auto reg = p.start(reg_request(kRegSuite, {"fa", "sdpa"}));
  EXPECT_EQ(reg.suite, "nightly");
  EXPECT_EQ(reg.state, "running");
  ASSERT_EQ(reg.cells.size(), 4u) << reg.cells.dump();
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& c : reg.cells) {
    seen.insert({c["kernel"].get<std::string>(), c["gpu_class"].get<std::string>()});
    EXPECT_EQ(c["verdict"], "pending") << c.dump();
    EXPECT_EQ(c["reason"], "queued") << c.dump();  // the job's state, while it has no verdict
    EXPECT_TRUE(c["delta_pct"].is_null() && c["median_us"].is_null() && c["change_point"].is_null());
    auto job = p.st->get_job(c["job_id"].get<std::int64_t>());
    ASSERT_TRUE(job);
    const auto& spec = job->spec;
    EXPECT_EQ(spec["target"]["gpu"], c["gpu_class"]) << spec.dump();
    EXPECT_EQ(spec["target"]["regions"], nlohmann::json({"eu-west-1"})) << spec.dump();
    EXPECT_FALSE(spec.contains("parent")) << spec.dump();
    EXPECT_EQ(spec["gates"]["performance"]["compare_to"], "baseline") << spec.dump();
    EXPECT_EQ(spec["gates"]["performance"]["threshold_pct"], 2) << spec.dump();
    EXPECT_EQ(job->submitted_by, "alice");
  }
  const std::set<std::pair<std::string, std::string>> want = {
      {"fa", "L4"}, {"fa", "H100"}, {"sdpa", "L4"}, {"sdpa", "H100"}};
  EXPECT_EQ(seen, want);

  // A second run measures again: new jobs, past the no-repeat map.
  const auto again = p.start(reg_request(kRegSuite, {"fa", "sdpa"}));
  ASSERT_EQ(again.cells.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NE(again.cells[i]["job_id"], reg.cells[i]["job_id"]);
}

TEST(Regressions, WithoutGpusTheSuiteRunsOnEveryClassOfTheLiveFleetOnce) {
  RegPlane p;
  p.enrol_agent("l4-b", "L4", false);  // a second L4 is still one class
  const auto gone = p.enrol_agent("a100", "A100", false).agent_id;
  ASSERT_TRUE(p.cp->retire_agent(gone, "admin").ok());
  const auto reg = p.start(reg_request("suite: nightly\njobs: [fa.yaml]\n", {"fa"}));
  std::multiset<std::string> classes;
  for (const auto& c : reg.cells) classes.insert(c["gpu_class"].get<std::string>());
  EXPECT_EQ(classes, (std::multiset<std::string>{"H100", "L4"})) << reg.cells.dump();
  // Without regions in the suite a job keeps its own.
  auto job = p.st->get_job(reg.cells[0]["job_id"].get<std::int64_t>());
  ASSERT_TRUE(job);
  EXPECT_EQ(job->spec["target"]["regions"], nlohmann::json({"ap-south-1"}));
}

// A job without a target, or with a class alone, gets the cell's target all the same.
TEST(Regressions, AJobWithoutATargetMapGetsTheCellsTarget) {
  RegPlane p;
  auto req = reg_request(kRegSuite, {"fa", "sdpa"});
  const std::string rest = "kernel: {family: attention, language: cuda, sources: [k.cu]}\n";
  req["jobs"][0]["spec_yaml"] = "name: fa\n" + rest;
  req["jobs"][1]["spec_yaml"] = "name: sdpa\ntarget: A100\n" + rest;
  const auto reg = p.start(req);
  ASSERT_EQ(reg.cells.size(), 4u);
  for (const auto& c : reg.cells) {
    auto job = p.st->get_job(c["job_id"].get<std::int64_t>());
    ASSERT_TRUE(job);
    EXPECT_EQ(job->spec["target"]["gpu"], c["gpu_class"]) << job->spec.dump();
    EXPECT_EQ(job->spec["target"]["regions"], nlohmann::json({"eu-west-1"})) << job->spec.dump();
  }
}

TEST(Regressions, ABadRequestIsRefusedWithTheFixAndCreatesNothing) {
  RegPlane p;
  auto refused = [&](const nlohmann::json& req, const std::string& words) {
    auto r = start_regression(*p.cp, req, "alice");
    ASSERT_FALSE(r.ok()) << req.dump();
    EXPECT_EQ(r.error().code, Errc::invalid_argument);
    EXPECT_NE(r.error().message.find(words), std::string::npos) << r.error().message;
  };
  const auto good = reg_request(kRegSuite, {"fa", "sdpa"});
  refused(nlohmann::json::array(), "kfleet regress SUITE.yaml builds it");
  for (const char* key : {"suite_yaml", "jobs"}) {
    auto r = good;
    r.erase(key);
    refused(r, "needs {suite_yaml, jobs");
  }
  {
    auto r = good;
    r["suite_yaml"] = 7;
    refused(r, "needs {suite_yaml, jobs");
    r = good;
    r["jobs"] = "fa.yaml";
    refused(r, "needs {suite_yaml, jobs");
  }
  refused(reg_request("suite: nightly\njobs: [fa.yaml]\ncolour: red\n", {"fa"}), "nightly.yaml");
  refused(reg_request(kRegSuite, {"fa"}), "nightly.yaml names 2 jobs but the request carries 1");
  for (const char* key : {"spec_yaml", "bundle"}) {
    auto r = good;
    r["jobs"][1].erase(key);
    refused(r, "sdpa.yaml: spec_yaml and bundle are required");
  }
  {
    auto r = good;
    r["jobs"][1]["spec_yaml"] = 3;
    refused(r, "sdpa.yaml: spec_yaml and bundle are required");
    r = good;
    r["jobs"][1]["spec_yaml"] = "[not, a, map]";
    refused(r, "sdpa.yaml: not a job");
    r = good;
    r["jobs"][1]["spec_yaml"] = "name: x\n  bad: [indent";
    refused(r, "sdpa.yaml: ");
    r = good;  // the second job, on the second class, fails the job parser: nothing is created
    r["jobs"][1]["spec_yaml"] = reg_job_yaml("sdpa") + "surprise: 1\n";
    refused(r, "surprise");
    r = good;  // a performance gate that is no map is the job parser's to explain
    r["jobs"][1]["spec_yaml"] = "name: x\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n"
                                "gates: {performance: fast}\n";
    refused(r, "gates.performance");
    r = good;
    r["jobs"][1]["spec_yaml"] =
        "name: p\ntarget: {gpu: L4}\nkernel: {problem: rmsnorm@1, language: cuda, sources: [k.cu]}\n"
        "gates: {correctness: {cases: [{name: small, seeds: [0]}]}}\n";
    refused(r, "no problem library");
  }
  EXPECT_TRUE(p.st->list_regressions(10).empty());
  EXPECT_TRUE(p.st->list_jobs({}).empty());
}

TEST(Regressions, AFleetWithNoClassIsToldToNameThem) {
  test::Plane p;  // no agent, and a static fleet cannot grow
  auto r = start_regression(*p.cp, reg_request("suite: nightly\njobs: [fa.yaml]\n", {"fa"}), "alice");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("on: {gpus: [L4, H100]}"), std::string::npos) << r.error().message;
  EXPECT_TRUE(p.st->list_regressions(10).empty());
}

TEST(Regressions, EachCellsVerdictFollowsItsJob) {
  RegPlane p;
  const auto reg = p.start(reg_request(kRegSuite, {"fa", "sdpa"}));
  auto v0 = p.view(reg.id);
  EXPECT_EQ(v0["regressed"], 0);
  EXPECT_EQ(v0["cell_count"], 4);

  Verdict slower = reg_verdict(RunOutcome::rejected, "performance", "regressed", 105);
  slower.baseline_us = 100;
  slower.delta_pct = 5;
  slower.ci_low_pct = 4.5;
  slower.ci_high_pct = 5.5;
  p.finish(RegPlane::cell(v0, "fa", "L4"), slower);
  Verdict same = reg_verdict(RunOutcome::passed, "", "same", 50);
  same.simulated = true;  // a real agent's result that says it is simulated is shown so
  BaselineComparison eager;
  eager.baseline = "eager";
  eager.speedup = 1.25;
  same.versus = {eager};
  p.finish(RegPlane::cell(v0, "fa", "H100"), same);
  p.finish(RegPlane::cell(v0, "sdpa", "L4"), reg_verdict(RunOutcome::rejected, "correctness", "", std::nullopt));

  auto v = p.view(reg.id);
  EXPECT_EQ(v["state"], "running") << "one cell is still pending";
  EXPECT_EQ(v["regressed"], 1);
  const auto fa_l4 = RegPlane::cell(v, "fa", "L4");
  EXPECT_EQ(fa_l4["verdict"], "regressed");
  EXPECT_EQ(fa_l4["reason"], "because regressed");
  EXPECT_EQ(fa_l4["median_us"], 105);
  EXPECT_EQ(fa_l4["baseline_us"], 100);
  EXPECT_EQ(fa_l4["delta_pct"], 5);
  EXPECT_EQ(fa_l4["ci_low_pct"], 4.5);
  EXPECT_EQ(fa_l4["ci_high_pct"], 5.5);
  EXPECT_EQ(fa_l4["correct"], true) << "a performance rejection is still correct";
  EXPECT_EQ(fa_l4["history"], 1);
  const auto fa_h100 = RegPlane::cell(v, "fa", "H100");
  EXPECT_EQ(fa_h100["verdict"], "same");
  EXPECT_EQ(fa_h100["simulated"], true);
  ASSERT_EQ(fa_h100["versus"].size(), 1u) << fa_h100.dump();
  EXPECT_EQ(fa_h100["versus"][0]["speedup"], 1.25);
  EXPECT_EQ(fa_l4["simulated"], false);
  EXPECT_FALSE(fa_l4.contains("versus")) << "no comparison, no versus: " << fa_l4.dump();
  EXPECT_TRUE(fa_h100["baseline_us"].is_null() && fa_h100["delta_pct"].is_null());
  const auto sdpa_l4 = RegPlane::cell(v, "sdpa", "L4");
  EXPECT_EQ(sdpa_l4["verdict"], "error") << "a rejection by another gate is no timing";
  EXPECT_EQ(sdpa_l4["reason"], "because correctness");
  EXPECT_EQ(sdpa_l4["correct"], false);
  EXPECT_FALSE(sdpa_l4.contains("history")) << "no median, no history";
  EXPECT_EQ(RegPlane::cell(v, "sdpa", "H100")["verdict"], "pending");

  // The last job passes with nothing to compare with: a missing baseline, and the run is done.
  p.finish(RegPlane::cell(v, "sdpa", "H100"), reg_verdict(RunOutcome::passed, "", "", 80));
  v = p.view(reg.id);
  EXPECT_EQ(RegPlane::cell(v, "sdpa", "H100")["verdict"], "missing baseline");
  EXPECT_EQ(v["state"], "done");
  EXPECT_EQ(p.st->get_regression(reg.id)->state, "done") << "the leader stores what it computed";
  EXPECT_EQ(p.st->get_regression(reg.id)->cells, v["cells"]);
  EXPECT_EQ(v["spec"]["suite"], "nightly");
  // A look that finds nothing new writes nothing.
  const auto stored = p.st->get_regression(reg.id)->updated_ms;
  p.clock->advance_ms(60'000);
  EXPECT_EQ(p.view(reg.id)["cells"], v["cells"]);
  EXPECT_EQ(p.st->get_regression(reg.id)->updated_ms, stored);
  EXPECT_TRUE(v.contains("fast_p"));
}

// A cell with no baseline yet takes its first passed result as one, set by whoever started
// the run; a failed result sets none, and a later run's result does not replace it.
TEST(Regressions, ACellsFirstPassedResultIsItsBaseline) {
  RegPlane p;
  const auto reg = p.start(reg_request(kRegSuite, {"fa", "sdpa"}));
  auto v0 = p.view(reg.id);
  p.finish(RegPlane::cell(v0, "fa", "L4"), reg_verdict(RunOutcome::passed, "", "", 100));
  p.finish(RegPlane::cell(v0, "fa", "H100"), reg_verdict(RunOutcome::rejected, "correctness", "", 50));
  const auto first = p.st->current_baseline("fa", "mission", "L4", false);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->median_us, 100);
  EXPECT_EQ(first->reason, "first result in regression run " + std::to_string(reg.id));
  EXPECT_EQ(first->set_by, "alice");
  EXPECT_FALSE(p.st->current_baseline("fa", "mission", "H100", false));
  // The finish refreshed the stored matrix without anyone looking.
  EXPECT_EQ(RegPlane::cell(nlohmann::json{{"cells", p.st->get_regression(reg.id)->cells}}, "fa", "L4")["verdict"],
            "missing baseline");

  const auto again = p.start(reg_request(kRegSuite, {"fa", "sdpa"}));
  p.finish(RegPlane::cell(p.view(again.id), "fa", "L4"), reg_verdict(RunOutcome::passed, "", "same", 90));
  EXPECT_EQ(p.st->current_baseline("fa", "mission", "L4", false)->median_us, 100);
}

TEST(Regressions, ACancelledOrFailedJobIsAnErrorCell) {
  RegPlane p;
  const auto reg = p.start(reg_request(kRegSuite, {"fa", "sdpa"}));
  auto v0 = p.view(reg.id);
  const auto cancelled = RegPlane::cell(v0, "fa", "L4")["job_id"].get<std::int64_t>();
  ASSERT_TRUE(p.cp->cancel(cancelled, "alice").ok());
  Verdict broke = reg_verdict(RunOutcome::error, "", "", std::nullopt);
  broke.reason = "the agent lost its GPU";
  p.finish(RegPlane::cell(v0, "fa", "H100"), broke);
  auto v = p.view(reg.id);
  EXPECT_EQ(RegPlane::cell(v, "fa", "L4")["verdict"], "error");
  const auto errored = RegPlane::cell(v, "fa", "H100");
  EXPECT_EQ(errored["verdict"], "error");
  EXPECT_EQ(errored["reason"], "the agent lost its GPU");
  EXPECT_EQ(v["state"], "running");
}

// Every earlier run of the suite adds its median of fa on L4 to the history; other kernels,
// other classes, other suites and later runs do not. 100 us for four runs, then 120: a change
// point four runs before the newest point.
TEST(Regressions, TheHistoryIsThisKernelOnThisClassInEarlierRunsOfTheSuite) {
  RegPlane p;
  // A run of `suite` with fa on L4 at `fa_l4` (and, with `others`, fa on H100 and sdpa on L4),
  // and two cells of fa on L4 without a median, which add nothing.
  auto earlier_run = [&](const std::string& suite, double fa_l4, bool others) {
    auto r = p.st->create_regression(suite, nlohmann::json::object(), p.clock->now_ms());
    ASSERT_TRUE(r.ok());
    nlohmann::json cells = {{{"kernel", "fa"}, {"gpu_class", "L4"}, {"median_us", fa_l4}},
                            {{"kernel", "fa"}, {"gpu_class", "L4"}, {"median_us", nullptr}},
                            {{"kernel", "fa"}, {"gpu_class", "L4"}}};
    if (others) {
      cells.push_back({{"kernel", "fa"}, {"gpu_class", "H100"}, {"median_us", 1000}});
      cells.push_back({{"kernel", "sdpa"}, {"gpu_class", "L4"}, {"median_us", 1000}});
    }
    ASSERT_TRUE(p.st->update_regression(r->id, "done", cells, p.clock->now_ms()).ok());
  };
  for (int i = 0; i < 4; ++i) earlier_run("nightly", 100, true);
  earlier_run("weekly", 5000, true);
  for (int i = 0; i < 3; ++i) earlier_run("nightly", 120, false);
  const auto reg = p.start(reg_request(kRegSuite, {"fa", "sdpa"}));
  earlier_run("nightly", 5000, true);  // later than the run: not its history
  auto v0 = p.view(reg.id);
  p.finish(RegPlane::cell(v0, "fa", "L4"), reg_verdict(RunOutcome::passed, "", "same", 120));
  p.finish(RegPlane::cell(v0, "fa", "H100"), reg_verdict(RunOutcome::passed, "", "same", 1000));
  const auto v = p.view(reg.id);
  const auto c = RegPlane::cell(v, "fa", "L4");
  EXPECT_EQ(c["history"], 8) << c.dump();
  ASSERT_TRUE(c["change_point"].is_object()) << c.dump();
  EXPECT_EQ(c["change_point"]["runs_ago"], 3) << c.dump();
  EXPECT_NEAR(c["change_point"]["shift_pct"].get<double>(), 20.0, 1e-9);
  EXPECT_LE(c["change_point"]["p_value"].get<double>(), 0.05);  // the detector's alpha
  const auto h = RegPlane::cell(v, "fa", "H100");
  EXPECT_EQ(h["history"], 5);  // four earlier runs and this one
  EXPECT_TRUE(h["change_point"].is_null()) << "one regime: " << h.dump();
}

TEST(Regressions, AStandbyComputesTheMatrixButWritesNothing) {
  RegPlane leader;
  const auto reg = leader.start(reg_request(kRegSuite, {"fa", "sdpa"}));
  auto v0 = leader.view(reg.id);
  leader.finish(RegPlane::cell(v0, "fa", "L4"), reg_verdict(RunOutcome::passed, "", "same", 10));
  // The finish refreshed the stored matrix; put it back as it was before, as a standby would
  // find it before the leader's next look.
  ASSERT_TRUE(leader.st->update_regression(reg.id, "running", reg.cells, 0).ok());
  Config cfg;
  cfg.enrol_token = "e";
  cfg.read_only = true;
  auto standby = std::make_unique<ControlPlane>(leader.io.get_executor(), *leader.st, leader.clock, *leader.prov, cfg);
  auto v = regression_view(*standby, reg.id);
  standby->stop();
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(RegPlane::cell(*v, "fa", "L4")["verdict"], "same");
  EXPECT_EQ(leader.st->get_regression(reg.id)->cells, reg.cells) << "the standby wrote";
  EXPECT_EQ(leader.st->get_regression(reg.id)->updated_ms, 0);
}

TEST(Regressions, FastPTakesACellsVersusOnlyAsAList) {
  const nlohmann::json cells = {{{"problem_kernel", true}, {"verdict", "same"}, {"correct", true}, {"versus", "1.5x"}}};
  const auto f = regression_fast_p(cells);
  EXPECT_EQ(f["kernels"], 1) << f.dump();
  for (const auto& b : f["baselines"]) EXPECT_EQ(b["timed"], 0) << f.dump();
}

TEST(Regressions, AnUnknownRunIsNotFound) {
  RegPlane p;
  auto v = regression_view(*p.cp, 42);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, Errc::not_found);
  EXPECT_EQ(v.error().message, "no regression run 42");
}

}  // namespace
}  // namespace kfleet::core
