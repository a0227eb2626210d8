// The GPU's settings belong to the fleet: read before and after each GPU stage, and a change
// rejects the run at the integrity gate, naming what changed. The simulated GPU stands in for
// the hardware; the settings it reports are set by the test, as NVML's would be by an admin
// (or a job that could) between the readings.
#include <gtest/gtest.h>

#include "pipeline_support.hpp"

using namespace kfleet;
using namespace kfleet::agent;
using kfleet::testing::verdict_is;
using kfleet::testing::PipelineRun;

namespace {

// The simulated backend, with GPU settings that a stage may change.
class SettingsBackend final : public kfleet::testing::SettingsChangingGpu {
 public:
  std::optional<nlohmann::json> gpu_settings() override { return settings; }
  nlohmann::json settings = {{"power_limit_w", 350.0}, {"compute_mode", "default"},
                             {"application_sm_clock_mhz", 1980}};

 private:
  void change() override {
    if (change_in == "correctness") settings["power_limit_w"] = 200.0;
    if (change_in == "benchmark") settings["compute_mode"] = "exclusive_process";
  }
};

std::optional<Verdict> run_with(SettingsBackend& b) {
  return PipelineRun().run(b, kfleet::testing::simulated_lease("settings", "k.cu"));
}

// A run whose GPU's settings change during `stage`.
std::optional<Verdict> run_changing_in(const std::string& stage) {
  SettingsBackend b;
  b.change_in = stage;
  return run_with(b);
}

}  // namespace

TEST(GpuSettings, UnchangedSettingsLetTheRunPass) {
  SettingsBackend b;
  auto v = run_with(b);
  ASSERT_TRUE(verdict_is(v, RunOutcome::passed));
}

TEST(GpuSettings, APowerLimitChangedDuringCorrectnessFailsAtIntegrity) {
  kfleet::testing::expect_integrity_rejection(run_changing_in("correctness"),
                                              {"power_limit_w 350.0 -> 200.0",
                                               "during correctness"});
}

TEST(GpuSettings, AComputeModeChangedDuringTheBenchmarkFailsAtIntegrity) {
  kfleet::testing::expect_integrity_rejection(run_changing_in("benchmark"),
                                              {"compute_mode \"default\" -> \"exclusive_process\""});
}
