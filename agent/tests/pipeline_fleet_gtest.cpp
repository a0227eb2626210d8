// The pipeline's side of "whose failure is it": a compiler missing on this agent, a full disk
// and a bundle kfleetd cannot serve are the fleet's. They are retried and, if they outlast the
// budget, the run is given back without a verdict; never `error`. What the job caused still is.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "fake_transport.hpp"
#include "kfleet/agent/pipeline.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;

namespace {

struct NullSink final : EventSink {
  std::mutex mu;
  std::vector<std::pair<std::string, nlohmann::json>> events;
  void emit(const std::string& type, nlohmann::json data) override {
    std::lock_guard<std::mutex> l(mu);
    events.emplace_back(type, std::move(data));
  }
  int count(const std::string& type, const std::string& key, const nlohmann::json& value) {
    std::lock_guard<std::mutex> l(mu);
    int n = 0;
    for (auto& [t, d] : events)
      if (t == type && d.contains(key) && d[key] == value) ++n;
    return n;
  }
};

// The simulated GPU, except that its build stage fails as told for the first `fail_builds`.
class FlakyBuild final : public Backend {
 public:
  explicit FlakyBuild(StageResult failure, int fail_builds)
      : inner_(make_simulated_backend({})), failure_(std::move(failure)), left_(fail_builds) {}
  std::string name() const override { return inner_->name(); }
  bool simulated() const override { return true; }
  Result<std::vector<GpuInfo>> discover() override { return inner_->discover(); }
  StageResult build(StageContext& c) override {
    ++builds;
    if (left_ > 0) {
      --left_;
      return failure_;
    }
    return inner_->build(c);
  }
  StageResult resources(StageContext& c) override { return inner_->resources(c); }
  StageResult correctness(StageContext& c) override {
    if (fail_correctness_ > 0) {
      --fail_correctness_;
      return failure_;
    }
    return inner_->correctness(c);
  }
  int fail_correctness_ = 0;
  StageResult benchmark(StageContext& c) override { return inner_->benchmark(c); }
  StageResult profile(StageContext& c) override { return inner_->profile(c); }
  std::atomic<int> builds{0};

 private:
  BackendPtr inner_;
  StageResult failure_;
  int left_;
};

Lease sim_lease() {
  Lease l;
  l.run_id = 5;
  l.job_id = 2;
  l.fencing_token = 1;
  l.ttl_ms = 3000;
  l.spec.name = "fleet/one";
  l.spec.kernel.sources = {"k.cu"};
  l.spec.kernel.entry = "k";
  ResourceBudget budget;
  budget.max_registers = 128;
  l.spec.gates.resources = budget;
  CorrectnessGate cg;
  cg.cases = {{"small", {}, {0}, false}};
  cg.tolerance.max_abs = 0.06;
  l.spec.gates.correctness = cg;
  SimulationSpec sim;
  sim.stage_ms = 1;
  sim.noise_pct = 0;
  l.spec.simulate = sim;
  return l;
}

struct FleetRun {
  kfleet::testing::FakeKfleetd server;
  NullSink sink;
  StopFlag stop;
  std::string dir = (fs::temp_directory_path() /
                     ("kfleet-pipeline-fleet-" + std::to_string(::getpid()) + "-" +
                      std::to_string(next_id()))).string();
  static int next_id() {
    static std::atomic<int> n{0};
    return n++;
  }
  std::uintmax_t free = 100ull << 30;
  std::string gave_back;
  ~FleetRun() { fs::remove_all(dir); }

  std::optional<Verdict> go(Backend& b, const Lease& l, int give_up_ms = 400) {
    PipelineDeps d{server, b, sink, stop, dir, {}, std::make_shared<SystemClock>(),
                   FleetRetry{std::chrono::milliseconds(20), std::chrono::milliseconds(80),
                              std::chrono::milliseconds(give_up_ms)},
                   [this](const std::string&) { return free; }};
    return run_pipeline(l, d, &gave_back);
  }
};

StageResult missing_compiler() {
  StageResult r;
  r.infra_error = true;
  r.fleet_error = true;
  r.reason = "nvcc not found (tried /usr/local/cuda/bin/nvcc, nvcc); install the CUDA toolkit";
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
  StageResult enospc;
  enospc.reason = "k.cu: fatal error: cannot write k.o: No space left on device";
  FlakyBuild b1(enospc, 1);
  FleetRun r1;
  auto v1 = r1.go(b1, sim_lease());
  ASSERT_TRUE(v1.has_value());
  EXPECT_EQ(v1->outcome, RunOutcome::passed) << v1->reason;
  EXPECT_EQ(b1.builds.load(), 2);

  // ... or a stage that would end in `error` failed with hardly any space left.
  StageResult odd;
  odd.reason = "ptxas exited with status 1";
  FlakyBuild b2(odd, 1000);
  FleetRun r2;
  r2.free = 1ull << 20;
  auto v2 = r2.go(b2, sim_lease(), 200);
  EXPECT_FALSE(v2.has_value());
  EXPECT_NE(r2.gave_back.find("the agent's disk is full"), std::string::npos) << r2.gave_back;
}

TEST(PipelineFleet, AMissingDriverIsTheFleetsFailure) {
  // The harness could not start on the GPU: the agent's driver, not the kernel.
  StageResult no_driver;
  no_driver.infra_error = true;
  no_driver.reason = "harness setup error: cudaGetDeviceCount: CUDA driver version is "
                     "insufficient for CUDA runtime version";
  FlakyBuild b(no_driver, 0);
  b.fail_correctness_ = 2;
  FleetRun r;
  auto v = r.go(b, sim_lease());
  ASSERT_TRUE(v.has_value()) << r.gave_back;
  EXPECT_EQ(v->outcome, RunOutcome::passed) << v->reason;
  EXPECT_EQ(r.sink.count("stage.finished", "fleet_error", true), 2);

  // The same words from a kernel that failed on its own are no infrastructure failure: the
  // job's text cannot buy it retries.
  StageResult kernel_said;
  kernel_said.reason = "case small seed 0: CUDA driver version is insufficient";
  FlakyBuild b2(kernel_said, 0);
  b2.fail_correctness_ = 1;
  FleetRun r2;
  auto v2 = r2.go(b2, sim_lease());
  ASSERT_TRUE(v2.has_value());
  EXPECT_EQ(v2->outcome, RunOutcome::rejected);
}

TEST(PipelineFleet, WhatTheJobCausedStaysAVerdictAndSaysWhichSideFailed) {
  // A build error of the job's, with plenty of disk: error, naming the job's side.
  StageResult bad;
  bad.reason = "k.cu:3:1: error: expected ';'";
  FlakyBuild b(bad, 1);
  FleetRun r;
  auto v = r.go(b, sim_lease());
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->outcome, RunOutcome::error);
  EXPECT_NE(v->reason.find("build failed: k.cu:3:1"), std::string::npos) << v->reason;
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
  ASSERT_TRUE(v2.has_value());
  EXPECT_EQ(v2->outcome, RunOutcome::rejected);
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
