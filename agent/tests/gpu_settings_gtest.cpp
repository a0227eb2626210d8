// The GPU's settings belong to the fleet: read before and after each GPU stage, and a change
// rejects the run at the integrity gate, naming what changed. The simulated GPU stands in for
// the hardware; the settings it reports are set by the test, as NVML's would be by an admin
// (or a job that could) between the readings.
#include <gtest/gtest.h>

#include <filesystem>

#include "fake_transport.hpp"
#include "kfleet/agent/pipeline.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;

namespace {

struct NullSink final : EventSink {
  void emit(const std::string&, nlohmann::json) override {}
};

// The simulated backend, with GPU settings that a stage may change.
class SettingsBackend final : public Backend {
 public:
  std::string name() const override { return inner_->name(); }
  bool simulated() const override { return true; }
  Result<std::vector<GpuInfo>> discover() override { return inner_->discover(); }
  StageResult build(StageContext& c) override { return inner_->build(c); }
  StageResult resources(StageContext& c) override { return inner_->resources(c); }
  StageResult correctness(StageContext& c) override {
    if (change_in == "correctness") settings["power_limit_w"] = 200.0;
    return inner_->correctness(c);
  }
  StageResult benchmark(StageContext& c) override {
    if (change_in == "benchmark") settings["compute_mode"] = "exclusive_process";
    return inner_->benchmark(c);
  }
  StageResult profile(StageContext& c) override { return inner_->profile(c); }
  std::optional<nlohmann::json> gpu_settings() override { return settings; }

  std::string change_in;
  nlohmann::json settings = {{"power_limit_w", 350.0}, {"compute_mode", "default"},
                             {"application_sm_clock_mhz", 1980}};

 private:
  BackendPtr inner_ = make_simulated_backend({});
};

Lease lease() {
  Lease l;
  l.run_id = 7;
  l.job_id = 3;
  l.fencing_token = 1;
  l.spec.name = "settings";
  l.spec.kernel.sources = {"k.cu"};
  l.spec.kernel.entry = "k";
  CorrectnessGate cg;
  cg.cases = {{"small", {}, {0}, false}};
  cg.tolerance.max_abs = 0.06;
  l.spec.gates.correctness = cg;
  SimulationSpec sim;
  sim.time_us = 100;
  sim.noise_pct = 0;
  sim.stage_ms = 1;
  l.spec.simulate = sim;
  return l;
}

std::optional<Verdict> run_with(SettingsBackend& b) {
  kfleet::testing::FakeKfleetd server;
  NullSink sink;
  StopFlag stop;
  const std::string dir = (fs::temp_directory_path() / ("kfleet-settings-" + std::to_string(::getpid()))).string();
  PipelineDeps d{server, b, sink, stop, dir, {}, std::make_shared<SystemClock>()};
  auto v = run_pipeline(lease(), d);
  fs::remove_all(dir);
  return v;
}

}  // namespace

TEST(GpuSettings, UnchangedSettingsLetTheRunPass) {
  SettingsBackend b;
  auto v = run_with(b);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->outcome, RunOutcome::passed) << v->reason;
}

TEST(GpuSettings, APowerLimitChangedDuringCorrectnessFailsAtIntegrity) {
  SettingsBackend b;
  b.change_in = "correctness";
  auto v = run_with(b);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->outcome, RunOutcome::rejected);
  EXPECT_EQ(v->gate, "integrity");
  EXPECT_NE(v->reason.find("power_limit_w 350.0 -> 200.0"), std::string::npos) << v->reason;
  EXPECT_NE(v->reason.find("during correctness"), std::string::npos) << v->reason;
}

TEST(GpuSettings, AComputeModeChangedDuringTheBenchmarkFailsAtIntegrity) {
  SettingsBackend b;
  b.change_in = "benchmark";
  auto v = run_with(b);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->outcome, RunOutcome::rejected);
  EXPECT_EQ(v->gate, "integrity");
  EXPECT_NE(v->reason.find("compute_mode \"default\" -> \"exclusive_process\""), std::string::npos)
      << v->reason;
}
