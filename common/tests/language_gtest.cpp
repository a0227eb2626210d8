// Which agents run which kernel.language, from what they report (kfleet/common/language.hpp).
#include "kfleet/common/language.hpp"

#include <gtest/gtest.h>

namespace kfleet {
namespace {

TEST(GpuRunsLanguage, PythonLanguagesNeedAnNvidiaGpuWhosePythonRecordsThem) {
  GpuInfo nv;
  nv.vendor = "nvidia";
  EXPECT_TRUE(gpu_runs_language(nv, "cuda"));
  EXPECT_FALSE(gpu_runs_language(nv, "hip"));
  EXPECT_FALSE(gpu_runs_language(nv, "triton"));  // no Python reported
  nv.extra["python"] = {{"languages", {"torch"}}, {"missing", {"triton: not importable"}}};
  EXPECT_TRUE(gpu_runs_language(nv, "torch"));
  EXPECT_FALSE(gpu_runs_language(nv, "triton"));
  nv.extra["python"] = {{"languages", "torch"}};  // malformed: no list
  EXPECT_FALSE(gpu_runs_language(nv, "torch"));
  GpuInfo amd;
  amd.vendor = "amd";
  amd.extra["python"] = {{"languages", {"torch", "triton"}}};
  EXPECT_TRUE(gpu_runs_language(amd, "hip"));
  EXPECT_FALSE(gpu_runs_language(amd, "triton"));
  GpuInfo sim;
  sim.simulated = true;
  EXPECT_TRUE(gpu_runs_language(sim, "triton"));
}

TEST(PythonRuntimeSummary, VersionsOrWhatIsMissing) {
  EXPECT_EQ(python_runtime_summary(nlohmann::json::object()), "-");
  nlohmann::json e;
  e["python"] = {{"torch", "2.11.0+cu130"}, {"triton", "3.6.0"}, {"languages", {"torch", "triton"}}};
  EXPECT_EQ(python_runtime_summary(e), "torch 2.11.0+cu130, triton 3.6.0");
  e["python"] = {{"torch", "2.11.0"}, {"triton", ""}, {"missing", {"triton: ModuleNotFoundError"}}};
  EXPECT_EQ(python_runtime_summary(e), "torch 2.11.0; no triton: ModuleNotFoundError");
  e["python"] = {{"error", "cannot run python3"}};
  EXPECT_EQ(python_runtime_summary(e), "no python (cannot run python3)");
}

}  // namespace
}  // namespace kfleet
