// The HIP backend reads the GPU's fleet settings through amd-smi (JSON): power cap and limits,
// clock levels, partition and performance level. A fake amd-smi on PATH stands in for ROCm's;
// what it prints comes from files the test changes between readings, as an admin (or a job
// that could) would change the GPU.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "pipeline_support.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;
using kfleet::testing::verdict_is;

namespace {

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

std::string static_json(int power_cap_w, const std::string& compute_partition) {
  return R"(WARNING: a line amd-smi prints before its JSON
[{"gpu": 0, "limit": {"max_power": {"value": )" + std::to_string(power_cap_w) +
         R"(, "unit": "W"}, "slowdown_edge_temperature": {"value": 100, "unit": "C"}},
  "clock": {"sys": {"frequency_levels": {"Level 0": "500 MHz", "Level 1": "2100 MHz"}}},
  "partition": {"compute_partition": ")" + compute_partition + R"(", "memory_partition": "NPS1"}},
 {"gpu": 1, "limit": {"max_power": {"value": 1, "unit": "W"}}}]
)";
}

std::string metric_json(const std::string& perf_level) {
  return R"([{"gpu": 0, "perf_level": ")" + perf_level + R"(", "power": {"socket_power": 123}}])";
}

// A temp dir with an executable `amd-smi` that prints static.json or metric.json, put first on
// PATH for the test's life (and PATH restored after).
class FakeAmdSmi {
 public:
  FakeAmdSmi() {
    dir_ = fs::temp_directory_path() / ("kfleet-amd-smi-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(++count_));
    fs::create_directories(dir_);
    write(dir_ / "amd-smi",
          "#!/bin/sh\ncase \"$1\" in\n  static) cat '" + (dir_ / "static.json").string() +
              "' ;;\n  metric) cat '" + (dir_ / "metric.json").string() +
              "' ;;\n  *) echo \"unknown command $1\" >&2; exit 2 ;;\nesac\n");
    ::chmod((dir_ / "amd-smi").c_str(), 0755);
    set(300, "SPX", "AUTO");
    const char* p = std::getenv("PATH");
    old_path_ = p ? p : "";
    ::setenv("PATH", (dir_.string() + ":" + old_path_).c_str(), 1);
  }
  ~FakeAmdSmi() {
    ::setenv("PATH", old_path_.c_str(), 1);
    fs::remove_all(dir_);
  }
  void set(int power_cap_w, const std::string& partition, const std::string& perf_level) {
    write(dir_ / "static.json", static_json(power_cap_w, partition));
    write(dir_ / "metric.json", metric_json(perf_level));
  }

 private:
  static inline int count_ = 0;
  fs::path dir_;
  std::string old_path_;
};

// Stages from the simulated GPU, settings from the real HIP backend (and so from amd-smi).
class HipSettingsBackend final : public kfleet::testing::SettingsChangingGpu {
 public:
  explicit HipSettingsBackend(FakeAmdSmi& smi) : smi_(smi) {}
  std::string name() const override { return "hip"; }
  std::optional<nlohmann::json> gpu_settings() override { return hip_->gpu_settings(); }

 private:
  void change() override {
    if (change_in == "correctness") smi_.set(220, "SPX", "AUTO");
    if (change_in == "benchmark") smi_.set(300, "CPX", "MANUAL");
  }
  FakeAmdSmi& smi_;
  BackendPtr hip_ = make_hip_backend({});
};

std::optional<Verdict> run_with(HipSettingsBackend& b) {
  return kfleet::testing::PipelineRun().run(b, kfleet::testing::simulated_lease("amd-settings", "k.hip"));
}

// A run on the fake amd-smi whose settings change during `stage`.
std::optional<Verdict> amd_run_changing_in(const std::string& stage) {
  FakeAmdSmi smi;
  HipSettingsBackend b(smi);
  b.change_in = stage;
  return run_with(b);
}

}  // namespace

TEST(AmdSettings, TheHipBackendReadsPowerCapClocksPartitionAndPerfLevelFromAmdSmi) {
  FakeAmdSmi smi;
  auto s = make_hip_backend({})->gpu_settings();
  ASSERT_TRUE(s.has_value()) << "the HIP backend should read amd-smi's settings";
  EXPECT_EQ((*s)["limit.max_power.value"], 300) << s->dump(2);
  EXPECT_EQ((*s)["partition.compute_partition"], "SPX") << s->dump(2);
  EXPECT_EQ((*s)["perf_level"], "AUTO") << s->dump(2);
  EXPECT_EQ((*s)["clock.sys.frequency_levels.Level 1"], "2100 MHz") << s->dump(2);
  // Readings that move on their own (power drawn) are not settings.
  EXPECT_FALSE(s->contains("power.socket_power")) << s->dump(2);
}

TEST(AmdSettings, UnchangedSettingsLetTheRunPass) {
  FakeAmdSmi smi;
  HipSettingsBackend b(smi);
  auto v = run_with(b);
  ASSERT_TRUE(verdict_is(v, RunOutcome::passed));
}

TEST(AmdSettings, APowerCapChangedDuringCorrectnessFailsAtIntegrity) {
  kfleet::testing::expect_integrity_rejection(amd_run_changing_in("correctness"),
                                              {"limit.max_power.value 300 -> 220",
                                               "during correctness"});
}

TEST(AmdSettings, APartitionAndPerfLevelChangedDuringTheBenchmarkFailAtIntegrity) {
  kfleet::testing::expect_integrity_rejection(amd_run_changing_in("benchmark"),
                                              {"partition.compute_partition \"SPX\" -> \"CPX\"",
                                               "perf_level \"AUTO\" -> \"MANUAL\""});
}

// Without amd-smi the settings are not read, and nothing is checked: the CUDA backend does the
// same without NVML.
TEST(AmdSettings, WithoutAmdSmiNothingIsReadOrChecked) {
  const char* p = std::getenv("PATH");
  const std::string old = p ? p : "";
  const fs::path empty = fs::temp_directory_path() / ("kfleet-no-amd-smi-" + std::to_string(::getpid()));
  fs::create_directories(empty);
  ::setenv("PATH", empty.c_str(), 1);
  auto s = make_hip_backend({})->gpu_settings();
  ::setenv("PATH", old.c_str(), 1);
  fs::remove_all(empty);
  EXPECT_FALSE(s.has_value());
}
