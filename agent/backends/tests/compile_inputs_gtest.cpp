// The agent's own check of a job's compile inputs before it builds (issue 49, point 3): whatever
// kfleetd let through, a flag, define or entry that a shell would read in nvcc's build steps is
// refused, by check_kernel_compile_inputs and by the CUDA backend's build stage.
#include <filesystem>
#include <functional>

#include <unistd.h>

#include <gtest/gtest.h>

#include "kfleet/agent/backend.hpp"
#include "kfleet/common/compile_flags.hpp"
#include "test_sandbox.hpp"
#include "../../../common/tests/shell_characters.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;

namespace {


KernelSpec kernel() {
  KernelSpec k;
  k.family = "attention";
  k.language = "cuda";
  k.sources = {"job_kernel.cu"};
  k.entry = "job_tile";
  k.defines = {{"STAGES", "2"}, {"SCALE", "0.125"}};
  k.flags = {"-O3", "-DTILE=64", "-Xptxas", "-v"};
  return k;
}

std::string refusal(const KernelSpec& k) {
  auto r = check_kernel_compile_inputs(k);
  return r.ok() ? std::string("(accepted)") : r.error().message;
}

// Every refused character, in every field, by the agent's own check (whatever kfleetd let through).
TEST(CompileInputs, EveryRefusedCharacterInEveryField) {
  for (const auto& c : kfleet::testing::refused_shell_characters()) {
    auto k = kernel();
    k.defines[0].second = "2" + c.raw;
    EXPECT_NE(refusal(k).find("kernel.defines.STAGES: "), std::string::npos) << c.shown << ": " << refusal(k);
    EXPECT_NE(refusal(k).find(c.shown), std::string::npos) << refusal(k);
    k = kernel();
    k.defines.push_back({"A" + c.raw, "1"});
    EXPECT_NE(refusal(k).find("is not a C identifier (it has " + c.shown), std::string::npos) << refusal(k);
    k = kernel();
    k.flags[1] = "-DTILE=64" + c.raw;
    EXPECT_NE(refusal(k).find("kernel.flags[1]: "), std::string::npos) << c.shown << ": " << refusal(k);
    EXPECT_NE(refusal(k).find(c.shown), std::string::npos) << refusal(k);
    k = kernel();
    k.entry = "job_tile" + c.raw;
    EXPECT_NE(refusal(k).find("kernel.entry: "), std::string::npos) << c.shown << ": " << refusal(k);
    EXPECT_NE(refusal(k).find(c.shown), std::string::npos) << refusal(k);
  }
}

TEST(CompileInputs, AWholeKernelIsCheckedFieldByField) {
  EXPECT_TRUE(check_kernel_compile_inputs(kernel()).ok()) << refusal(kernel());
  // One change to the good kernel each, and how its refusal reads (begins: at its start).
  const struct {
    std::function<void(KernelSpec&)> change;
    std::string says;
    bool begins;
  } cases[] = {
      {[](KernelSpec& k) { k.defines[1].second = "0.125$(id)"; },
       "kernel.defines.SCALE: '0.125$(id)' has U+0024 '$', which a shell expands, even inside "
       "double quotes; a define value may hold only",
       true},
      {[](KernelSpec& k) { k.defines.push_back({"X\nY", "1"}); },
       "kernel.defines.X\\nY: 'X\\nY' is not a C identifier (it has U+000A (a newline), which ends "
       "a shell command)",
       true},
      {[](KernelSpec& k) { k.entry = "job_tile`id`"; },
       "kernel.entry: 'job_tile`id`' is not a C identifier (it has U+0060 '`', which a shell runs "
       "as a command",
       true},
      {[](KernelSpec& k) { k.flags.push_back("-DN=1;id"); },
       "kernel.flags[4]: '-DN=1;id' has U+003B ';', which is a shell operator", true},
      {[](KernelSpec& k) { k.flags = {"-DA=1,B=2"}; },  // nvcc would define B too
       "U+002C ',', which nvcc takes as the start of another define", false},
      {[](KernelSpec& k) { k.flags = {"-ccbin", "./evil.sh"}; },  // the allow-list still holds
       "kernel.flags[0]: '-ccbin' is not allowed", false},
  };
  for (const auto& c : cases) {
    auto k = kernel();
    c.change(k);
    const std::string r = refusal(k);
    if (c.begins) EXPECT_EQ(r.rfind(c.says, 0), 0u) << r;
    else EXPECT_NE(r.find(c.says), std::string::npos) << r;
  }
}

struct CompileFixture {
  fs::path root = fs::temp_directory_path() / ("kfleet_compile_inputs_" + std::to_string(::getpid()));
  BackendPtr backend;
  CompileFixture() {
    fs::create_directories(root / "work");
    CudaBackendOptions o;
    o.harness_dir = (kBackendTestsDir / "fake_harness").string();
    o.gpu_class = "L4";
    o.arch = "sm_89";
    o.cache_dir = (root / "cache").string();
    o.require_exclusive = false;  // no NVML on CI hosts
    o.sandbox = test_sandbox();
    backend = make_cuda_backend(o);
  }
  ~CompileFixture() { fs::remove_all(root); }
};

class NullSink : public EventSink {
 public:
  void emit(const std::string&, nlohmann::json) override {}
};

StageResult build(const KernelSpec& k) {
  CompileFixture b;
  NullSink sink;
  StopFlag stop;
  JobSpec s;
  s.name = "t";
  s.timeout_s = 120;
  s.kernel = k;
  StageContext c{s, (kBackendTestsDir / "kernels").string(), (b.root / "work").string(),
                 GpuInfo{}, Comparison{}, sink, stop};
  return b.backend->build(c);
}

// Before the change nvcc took `-DX=$(...)` from kernel.flags and ran the command in its
// preprocessing step; now the build stage refuses the job before it runs the compiler.
TEST(CompileInputs, TheCudaBackendRefusesAShellFlagBeforeCompiling) {
  auto k = kernel();
  k.flags = {"-O3", "-DX=$(touch${IFS}kfleet-pwned)"};
  auto r = build(k);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason.rfind("kernel.flags[1]: '-DX=$(touch${IFS}kfleet-pwned)' has U+0024 '$'", 0), 0u)
      << r.reason;
}

// Needs HarnessBackend::build_one to call check_kernel_compile_inputs(k) where it now calls
// check_compile_flags(k.flags) (harness_build.cpp); enable it with that line.
TEST(CompileInputs, TheCudaBackendRefusesAShellDefineOrEntryBeforeCompiling) {
  auto k = kernel();
  k.defines = {{"X", "$(touch${IFS}kfleet-pwned)"}};
  auto r = build(k);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason.rfind("kernel.defines.X: '$(touch${IFS}kfleet-pwned)' has U+0024 '$'", 0), 0u)
      << r.reason;

  k = kernel();
  k.entry = "job_tile`id`";
  r = build(k);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason.rfind("kernel.entry: 'job_tile`id`' is not a C identifier", 0), 0u) << r.reason;
}

}  // namespace
