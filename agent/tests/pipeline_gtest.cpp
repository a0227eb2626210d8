// The stage pipeline with the simulated GPU and an in-memory kfleetd: verdicts per gate,
// seed 000's negative result, and a quiet stop mid-stage.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "pipeline_support.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;
using kfleet::testing::verdict_is;

namespace {

Lease seed_lease(double time_us, double baseline_us) {
  auto l = kfleet::testing::simulated_lease("fp8-sdpa/stage3-step2-xor", "fp8_sdpa.cu", time_us);
  l.run_id = 42;
  l.job_id = 4;
  l.spec.kernel.entry = "fp8_sdpa";
  ResourceBudget budget;
  budget.max_registers = 128;
  budget.max_shared_bytes = 65536;
  budget.max_spill_bytes = 0;
  l.spec.gates.resources = budget;
  l.spec.gates.correctness->cases = {{"small", {}, {0, 1, 2}, false}, {"mission", {}, {0, 1, 2}, false}};
  PerformanceGate pg;
  pg.case_name = "mission";
  pg.compare_to.kind = CompareTo::Kind::parent;
  l.spec.gates.performance = pg;
  l.compare = Comparison::from_json(
      {{"kind", "parent"}, {"label", "fp8-sdpa/stage2"}, {"median_us", baseline_us}});
  return l;
}

// A run on the simulated GPU (or a backend the test puts in its place).
struct Harness : kfleet::testing::PipelineRun {
  BackendPtr backend = make_simulated_backend({});
  std::optional<Verdict> run(const Lease& l) { return PipelineRun::run(*backend, l); }
};

}  // namespace

TEST(Pipeline, Seed000NegativeResultIsRejectedOnPerformance) {
  Harness h;
  auto v = h.run(seed_lease(696, 656));
  ASSERT_TRUE(verdict_is(v, RunOutcome::rejected));
  EXPECT_EQ(v->gate, "performance");
  EXPECT_EQ(v->reason, "do not merge: +6.1% (696 µs vs 656 µs)");
  EXPECT_EQ(v->perf, "regressed");
  EXPECT_TRUE(v->simulated);
  ASSERT_TRUE(v->delta_pct.has_value());
  EXPECT_NEAR(*v->delta_pct, 6.1, 0.05);

  std::vector<std::string> started, finished;
  for (auto& e : h.sink.of("stage.started")) started.push_back(e["stage"]);
  for (auto& e : h.sink.of("stage.finished")) finished.push_back(e["stage"]);
  std::vector<std::string> want = {"fetch", "build", "resources", "correctness", "benchmark", "verdict"};
  EXPECT_EQ(started, want);
  EXPECT_EQ(finished, want);
  EXPECT_EQ(h.sink.of("correctness").size(), 6u);
  EXPECT_EQ(h.sink.of("bench.result").size(), 1u);
  EXPECT_EQ(h.sink.of("verdict").size(), 1u);
  for (auto& [type, data] : h.sink.events) EXPECT_EQ(data.value("simulated", false), true) << type;
}

TEST(Pipeline, FasterThanBaselinePassesAsImproved) {
  Harness h;
  auto v = h.run(seed_lease(600, 656));
  ASSERT_TRUE(verdict_is(v, RunOutcome::passed));
  EXPECT_EQ(v->perf, "improved");
  EXPECT_NE(v->reason.find("-8.5%"), std::string::npos) << v->reason;
}

TEST(Pipeline, NoBaselinePassesWithoutPerf) {
  Harness h;
  auto l = seed_lease(100, 0);
  l.compare = {};
  auto v = h.run(l);
  ASSERT_TRUE(verdict_is(v, RunOutcome::passed));
  EXPECT_EQ(v->perf, "");
  EXPECT_NEAR(v->median_us.value_or(0), 100, 1e-6);
}

// A problem's kernel on a simulated agent: simulated comparisons with kfleet's PyTorch
// references (1.3 and 1.05 times the first job's time unless the job says), the reason's last
// line, and the agent's "cache": the next job of the same key reads the same references.
TEST(Pipeline, AProblemsKernelIsComparedWithSimulatedPyTorchReferences) {
  Harness h;
  auto l = seed_lease(696, 656);
  l.spec.kernel.family = "attention";
  auto v = h.run(l);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->outcome, RunOutcome::rejected);
  EXPECT_EQ(v->reason, "do not merge: +6.1% (696 µs vs 656 µs)\n"
                       "1.30x eager [1.30, 1.30], 1.05x torch.compile [1.05, 1.05] (mission, simulated)");
  ASSERT_EQ(v->versus.size(), 2u);
  for (const auto& c : v->versus) {
    EXPECT_TRUE(c.simulated);
    EXPECT_FALSE(c.cached);
    EXPECT_EQ(c.key.value("problem", ""), "attention");
    EXPECT_EQ(c.key.value("case", ""), "mission");
    EXPECT_EQ(c.key.value("gpu_class", ""), "L4");
  }
  EXPECT_NEAR(*v->versus[0].reference_us, 904.8, 1e-6);
  EXPECT_EQ(h.sink.of("bench.result")[0]["versus"].size(), 2u);

  // The next iteration, faster, on the same agent: the same references, from its "cache".
  auto next = seed_lease(600, 656);
  next.spec.kernel.family = "attention";
  auto w = h.run(next);
  ASSERT_TRUE(w.has_value());
  ASSERT_EQ(w->versus.size(), 2u);
  EXPECT_TRUE(w->versus[0].cached);
  EXPECT_NEAR(*w->versus[0].speedup, 904.8 / 600, 1e-9);
  EXPECT_NEAR(*w->versus[1].speedup, 730.8 / 600, 1e-9);

  // Another shape of the same case name is another key: timed anew, from this job's time.
  auto wider = seed_lease(500, 656);
  wider.spec.kernel.family = "attention";
  wider.spec.gates.correctness->cases[1].shape.dims = {{"S", 4096}};
  auto wv = h.run(wider);
  ASSERT_TRUE(wv.has_value());
  EXPECT_FALSE(wv->versus[0].cached);
  EXPECT_NEAR(*wv->versus[0].speedup, 1.3, 1e-9);
  EXPECT_NE(wv->versus[0].key["options"], v->versus[0].key["options"]);

  // A job's own simulated references (simulate.eager_us, compile_us) for another key.
  auto own = seed_lease(500, 656);
  own.spec.kernel.family = "attention";
  own.spec.gates.performance->case_name = "small";
  own.spec.simulate->eager_us = 400;
  own.spec.simulate->compile_us = 250;
  auto o = h.run(own);
  ASSERT_TRUE(o.has_value());
  EXPECT_NEAR(*o->versus[0].speedup, 0.8, 1e-9);
  EXPECT_NEAR(*o->versus[1].speedup, 0.5, 1e-9);
  EXPECT_EQ(o->versus[0].case_name, "small");
}

TEST(Pipeline, GateFailuresGiveTheirVerdicts) {
  struct Case {
    std::string fail;
    RunOutcome outcome;
    std::string gate, reason_part;
  };
  for (const auto& c : std::vector<Case>{
           {"resources", RunOutcome::rejected, "resources", "register count 168 > budget 128"},
           {"correctness", RunOutcome::rejected, "correctness", "case mission seed 0: max_abs 0.24"},
           {"build", RunOutcome::error, "", "build failed: fp8_sdpa.cu:42:7: error"},
           {"crash", RunOutcome::error, "", "harness crashed (signal 11)"},
           {"performance", RunOutcome::rejected, "performance", "do not merge: +10.0%"}}) {
    Harness h;
    auto l = seed_lease(656, 656);
    l.spec.simulate->fail_stage = c.fail;
    auto v = h.run(l);
    ASSERT_TRUE(v.has_value()) << c.fail;
    EXPECT_EQ(v->outcome, c.outcome) << c.fail;
    EXPECT_EQ(v->gate, c.gate) << c.fail;
    EXPECT_NE(v->reason.find(c.reason_part), std::string::npos) << c.fail << ": " << v->reason;
    EXPECT_EQ(h.sink.of("verdict").size(), 1u);
    EXPECT_TRUE(h.sink.of("bench.result").empty() == (c.fail != "performance")) << c.fail;
  }
}

TEST(Pipeline, AProfileAfterAFailedGateIsStoredToo) {
  for (const std::string fail : {"correctness", "performance"}) {
    Harness h;
    auto l = seed_lease(656, 656);
    l.spec.simulate->fail_stage = fail;
    ProfileSpec p;
    p.tool = "ncu";
    p.metrics = {"gpu__time_duration.sum"};
    p.when = "rejected";
    l.spec.profile = p;
    auto v = h.run(l);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->outcome, RunOutcome::rejected) << fail;
    auto profiles = h.sink.of("profile");
    ASSERT_EQ(profiles.size(), 1u) << fail;
    EXPECT_EQ(profiles[0]["tool"], "ncu");
    EXPECT_TRUE(profiles[0]["metrics"].contains("gpu__time_duration.sum")) << profiles[0].dump();
  }
}

TEST(Pipeline, HangTimesOutAsAnError) {
  Harness h;
  auto l = seed_lease(656, 656);
  l.spec.simulate->fail_stage = "hang";
  l.spec.timeout_s = 1;
  auto v = h.run(l);
  ASSERT_TRUE(verdict_is(v, RunOutcome::error, "timed out after 1s"));
}

TEST(Pipeline, StopMidStageEndsQuietly) {
  Harness h;
  auto l = seed_lease(656, 656);
  l.spec.simulate->stage_ms = 60000;
  h.sink.on_emit = [&h](const std::string& type, const nlohmann::json& data) {
    if (type == "stage.started" && data.value("stage", "") == "build") h.stop.stop = true;
  };
  auto t0 = std::chrono::steady_clock::now();
  auto v = h.run(l);
  EXPECT_FALSE(v.has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_TRUE(h.sink.of("verdict").empty());
  EXPECT_TRUE(h.sink.of("stage.started").size() == 2u);  // fetch, build; nothing after
}

TEST(Pipeline, FetchesAndUnpacksTheBundleAndRefusesAMismatch) {
  Harness h;
  Bundle b;
  b.files = {{"fp8_sdpa.cu", "__global__ void k() {}\n"}};
  auto l = seed_lease(656, 656);
  l.bundle_hash = b.hash();
  h.server.bundles[b.hash()] = b;
  auto v = h.run(l);
  ASSERT_TRUE(verdict_is(v, RunOutcome::passed));
  std::ifstream in(h.dir / "src" / "fp8_sdpa.cu");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, b.files[0].content);

  // Content that does not match its name was damaged since submission: the fleet's failure.
  // It is never unpacked; after its retries the run is given back, without a verdict.
  Harness h2;
  l.bundle_hash = "sha256:0000";
  l.ttl_ms = 300;  // the retry budget
  h2.server.bundles["sha256:0000"] = b;
  std::string gave_back;
  PipelineDeps d = h2.deps(*h2.backend);
  d.retry = FleetRetry{std::chrono::milliseconds(20), std::chrono::milliseconds(50),
                       std::chrono::milliseconds(300)};
  auto v2 = run_pipeline(l, d, &gave_back);
  EXPECT_FALSE(v2.has_value());
  EXPECT_NE(gave_back.find("hashes to"), std::string::npos) << gave_back;
  EXPECT_GE(h2.server.fetches(), 2);
  EXPECT_TRUE(h2.sink.of("verdict").empty());
}

// A job process's sandbox speaks up (a call its syscall filter denied) through a log line that
// names no stage, whichever stage ran the process: the pipeline files it under that stage.
TEST(Pipeline, ALogLineWithoutAStageIsFiledUnderTheRunningOne) {
  struct Speaking final : kfleet::testing::SimulatedGpu {
    StageResult build(StageContext& c) override {
      c.sink.emit("log", {{"stream", "sandbox"}, {"text", "sandbox: denied ptrace (EPERM)"}});
      return inner_->build(c);
    }
    StageResult correctness(StageContext& c) override {
      c.sink.emit("log", {{"stream", "sandbox"}, {"text", "sandbox: denied bpf (EPERM)"}});
      return inner_->correctness(c);
    }
  };
  Harness h;
  h.backend = std::make_unique<Speaking>();
  auto v = h.run(seed_lease(600, 656));
  ASSERT_TRUE(v.has_value());
  std::map<std::string, std::string> stage_of;
  for (auto& e : h.sink.of("log")) stage_of[e.value("text", "")] = e.value("stage", "");
  EXPECT_EQ(stage_of["sandbox: denied ptrace (EPERM)"], "build");
  EXPECT_EQ(stage_of["sandbox: denied bpf (EPERM)"], "correctness");
}
