// The pipeline's side of "whose failure is it": a compiler missing on this agent, a full disk
// and a bundle kfleetd cannot serve are the fleet's. They are retried and, if they outlast the
// budget, the run is given back without a verdict; never `error`. What the job caused still is.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "pipeline_support.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;
using kfleet::testing::verdict_is;

namespace {

// The simulated GPU, except that its build stage fails as told for the first `fail_builds`.
class FlakyBuild final : public kfleet::testing::SimulatedGpu {
 public:
  explicit FlakyBuild(StageResult failure, int fail_builds)
      : failure_(std::move(failure)), left_(fail_builds) {}
  StageResult build(StageContext& c) override {
    ++builds;
    if (left_ > 0) {
      --left_;
      return failure_;
    }
    return inner_->build(c);
  }
  StageResult correctness(StageContext& c) override {
    if (fail_correctness_ > 0) {
      --fail_correctness_;
      return failure_;
    }
    return inner_->correctness(c);
  }
  int fail_correctness_ = 0;
  std::atomic<int> builds{0};

 private:
  StageResult failure_;
  int left_;
};

Lease sim_lease() {
  auto l = kfleet::testing::simulated_lease("fleet/one", "k.cu");
  l.ttl_ms = 3000;
  ResourceBudget budget;
  budget.max_registers = 128;
  l.spec.gates.resources = budget;
  return l;
}
struct FleetRun : kfleet::testing::PipelineRun {
  std::uintmax_t free = 100ull << 30;
  std::string gave_back;

  std::optional<Verdict> go(Backend& b, const Lease& l, int give_up_ms = 400) {
    PipelineDeps d = deps(b);
    d.retry = FleetRetry{std::chrono::milliseconds(20), std::chrono::milliseconds(80),
                         std::chrono::milliseconds(give_up_ms)};
    d.free_bytes = [this](const std::string&) { return free; };
    return run_pipeline(l, d, &gave_back);
  }
};

// A stage that failed saying `reason` (infra: it could not run at all).
StageResult failed(std::string reason, bool infra = false) {
  StageResult r;
  r.infra_error = infra;
  r.reason = std::move(reason);
  return r;
}

StageResult missing_compiler() {
  StageResult r = failed("nvcc not found (tried /usr/local/cuda/bin/nvcc, nvcc); install the CUDA "
                         "toolkit", /*infra=*/true);
  r.fleet_error = true;
  return r;
}

TEST(PipelineFleet, AMissingCompilerIsRetriedAndTheRunGoesOn) {
  FlakyBuild b(missing_compiler(), 2);
  FleetRun r;
  auto v = r.go(b, sim_lease());
  ASSERT_TRUE(v.has_value()) << r.gave_back;
  EXPECT_EQ(v->outcome, RunOutcome::passed) << v->reason;
  EXPECT_EQ(b.builds.load(), 3);
  EXPECT_EQ(r.sink.count("stage.finished", "fleet_error", true), 2);
}

TEST(PipelineFleet, AMissingCompilerThatStaysGivesTheRunBackWithoutAVerdict) {
  FlakyBuild b(missing_compiler(), 1000);
  FleetRun r;
  auto v = r.go(b, sim_lease(), 200);
  EXPECT_FALSE(v.has_value()) << "a verdict for the fleet's failure: " << v->reason;
  EXPECT_NE(r.gave_back.find("nvcc not found"), std::string::npos) << r.gave_back;
  EXPECT_NE(r.gave_back.find("the fleet's failure"), std::string::npos) << r.gave_back;
  EXPECT_EQ(r.sink.count("verdict", "outcome", "error"), 0);
  EXPECT_GE(b.builds.load(), 2);
}

TEST(PipelineFleet, StopWhileRetryingEndsQuietly) {
  FlakyBuild b(missing_compiler(), 1000);
  FleetRun r;
  std::thread stopper([&] {
    while (b.builds.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    r.stop.stop = true;
  });
  auto v = r.go(b, sim_lease(), 60000);
  stopper.join();
  EXPECT_FALSE(v.has_value());
  EXPECT_TRUE(r.gave_back.empty()) << "a stopped run is not given back: kfleetd took it";
}

TEST(PipelineFleet, AFullDiskIsTheFleetsFailureNotTheJobs) {
  // The text says so (ENOSPC from the compiler or the harness)...
  FlakyBuild b1(failed("k.cu: fatal error: cannot write k.o: No space left on device"), 1);
  FleetRun r1;
  auto v1 = r1.go(b1, sim_lease());
  ASSERT_TRUE(verdict_is(v1, RunOutcome::passed));
  EXPECT_EQ(b1.builds.load(), 2);

  // ... or a stage that would end in `error` failed with hardly any space left.
  FlakyBuild b2(failed("ptxas exited with status 1"), 1000);
  FleetRun r2;
  r2.free = 1ull << 20;
  auto v2 = r2.go(b2, sim_lease(), 200);
  EXPECT_FALSE(v2.has_value());
  EXPECT_NE(r2.gave_back.find("the agent's disk is full"), std::string::npos) << r2.gave_back;
}

TEST(PipelineFleet, AMissingDriverIsTheFleetsFailure) {
  // The harness could not start on the GPU: the agent's driver, not the kernel.
  FlakyBuild b(failed("harness setup error: cudaGetDeviceCount: CUDA driver version is "
                      "insufficient for CUDA runtime version",
                      /*infra=*/true),
               0);
  b.fail_correctness_ = 2;
  FleetRun r;
  auto v = r.go(b, sim_lease());
  ASSERT_TRUE(v.has_value()) << r.gave_back;
  EXPECT_EQ(v->outcome, RunOutcome::passed) << v->reason;
  EXPECT_EQ(r.sink.count("stage.finished", "fleet_error", true), 2);

  // The same words from a kernel that failed on its own are no infrastructure failure: the
  // job's text cannot buy it retries.
  FlakyBuild b2(failed("case small seed 0: CUDA driver version is insufficient"), 0);
  b2.fail_correctness_ = 1;
  FleetRun r2;
  auto v2 = r2.go(b2, sim_lease());
  ASSERT_TRUE(verdict_is(v2, RunOutcome::rejected));
}

TEST(PipelineFleet, WhatTheJobCausedStaysAVerdictAndSaysWhichSideFailed) {
  // A build error of the job's, with plenty of disk: error, naming the job's side.
  FlakyBuild b(failed("k.cu:3:1: error: expected ';'"), 1);
  FleetRun r;
  auto v = r.go(b, sim_lease());
  ASSERT_TRUE(verdict_is(v, RunOutcome::error, "build failed: k.cu:3:1"));
  EXPECT_NE(v->reason.find("the job's failure"), std::string::npos) << v->reason;
  EXPECT_EQ(v->metrics.value("failed_side", ""), "job");
  EXPECT_EQ(b.builds.load(), 1) << "the job's failure must not be retried";

  // A gate's rejection stands even on a nearly full disk: it is a verdict on the kernel.
  FleetRun r2;
  r2.free = 1ull << 20;
  auto l = sim_lease();
  l.spec.simulate->fail_stage = "correctness";
  BackendPtr sim = make_simulated_backend({});
  auto v2 = r2.go(*sim, l);
  ASSERT_TRUE(verdict_is(v2, RunOutcome::rejected));
  EXPECT_EQ(v2->gate, "correctness");
}

TEST(PipelineFleet, ABundleKfleetdCannotServeIsRetriedThenGivenBack) {
  Bundle bundle;
  bundle.files = {{"k.cu", "__global__ void k() {}\n"}};
  auto l = sim_lease();
  l.bundle_hash = bundle.hash();
  BackendPtr sim = make_simulated_backend({});

  // Unreachable for a moment: the fetch is retried and the run goes on.
  FleetRun r;
  r.server.bundles[bundle.hash()] = bundle;
  r.server.unreachable = true;
  std::thread back([&] {
    while (r.server.fetches() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard<std::mutex> g(r.server.mu);
    r.server.unreachable = false;
  });
  auto v = r.go(*sim, l);
  back.join();
  ASSERT_TRUE(v.has_value()) << r.gave_back;
  EXPECT_EQ(v->outcome, RunOutcome::passed) << v->reason;

  // Never served (or never whole): given back, no verdict.
  FleetRun r2;
  r2.server.bundles[bundle.hash()] = Bundle{{{"k.cu", "tampered\n"}}};
  auto v2 = r2.go(*sim, l, 200);
  EXPECT_FALSE(v2.has_value());
  EXPECT_NE(r2.gave_back.find("fetch"), std::string::npos) << r2.gave_back;
}

}  // namespace
