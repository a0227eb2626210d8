// The compile backend: a GPU-less machine that builds jobs and runs their resources gate for
// real (nvcc for CUDA, hipcc or clang-19 for HIP) so that no GPU time is spent on a kernel that
// does not build or breaks its budget. kfleetd then hands the job to a GPU agent of its class.
#include <cctype>
#include <map>
#include <memory>
#include <mutex>

#include "common/harness_backend.hpp"
#include "common/sandbox.hpp"
#include "kfleet/common/event.hpp"
#include "kfleet/common/language.hpp"

namespace kfleet::backends {
namespace {

class CompileBackend final : public agent::Backend {
 public:
  explicit CompileBackend(agent::CompileBackendOptions o) : opts_(std::move(o)) {}

  std::string name() const override { return "compile"; }
  bool simulated() const override { return false; }
  bool sandboxed() const override { return opts_.sandbox && opts_.sandbox->isolated(); }

  // No GPU: kfleetd needs one entry to list; its class never matches a job's target.
  Result<std::vector<GpuInfo>> discover() override {
    GpuInfo g;
    g.gpu_class = "compile";
    g.name = "no GPU (compile agent: nvcc, clang-19)";
    g.vendor = "none";
    return std::vector<GpuInfo>{g};
  }

  agent::StageResult build(agent::StageContext& c) override {
    current_ = nullptr;
    const auto& k = c.spec.kernel;
    if (k.family == "custom") {
      // Its own build step may need the GPU vendor's full toolchain and libraries: it runs on
      // the GPU agent, which builds before it tests.
      agent::StageResult r;
      r.ok = true;
      r.data["skipped"] = "custom job: its own build step runs on the GPU agent";
      c.sink.log(stage::build, "custom job: its build step runs on the GPU agent");
      return r;
    }
    if (is_python_language(k.language)) {
      // Triton's JIT and load_inline compile inside the recorder, on the GPU agent: nothing to
      // build or gate here, the job is handed on as it is.
      agent::StageResult r;
      r.ok = true;
      r.data["skipped"] = k.language + " job: it compiles in its recorder on the GPU agent";
      c.sink.log(stage::build, k.language + " job: nothing to build ahead of time; handed to a GPU agent");
      return r;
    }
    std::string arch = c.gpu.arch.empty() ? agent::compile_arch_for(c.spec.target.gpu) : c.gpu.arch;
    if (arch.empty())
      return infra("no arch known for gpu '" + c.spec.target.gpu +
                   "': enrol a GPU agent of that class or name an arch (sm_89, gfx1151) as the "
                   "job's target.gpu");
    // The target decides the toolchain: a gfx arch builds with HIP (a portable .cu source
    // included, as the harness's own are), an sm arch with nvcc.
    const bool hip = arch.rfind("gfx", 0) == 0;
    if (!hip && k.language == "hip")
      return infra("a HIP job cannot target " + arch + " (" + c.spec.target.gpu + ")");
    auto* b = backend_for(hip, arch);
    current_ = b;
    return b->build(c);
  }

  agent::StageResult resources(agent::StageContext& c) override {
    if (c.spec.kernel.family == "custom" || is_python_language(c.spec.kernel.language)) {
      agent::StageResult r;
      r.ok = true;
      r.data["skipped"] = c.spec.kernel.family == "custom"
                              ? "custom jobs report no compiler resources"
                              : c.spec.kernel.language + " kernels are compiled in the recorder: no compiler resources";
      return r;
    }
    if (!current_) return infra("the build stage did not run");
    return current_->resources(c);
  }

  agent::StageResult correctness(agent::StageContext&) override { return no_gpu(); }
  agent::StageResult benchmark(agent::StageContext&) override { return no_gpu(); }
  agent::StageResult profile(agent::StageContext&) override { return no_gpu(); }

 private:
  static agent::StageResult no_gpu() {
    return infra("a compile agent has no GPU: kfleetd hands GPU stages to a GPU agent");
  }

  agent::Backend* backend_for(bool hip, const std::string& arch) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& b = backends_[arch];
    if (!b) {
      // The same settings for either vendor's backend: builds only, no harness linked.
      auto options = [&](auto o) {
        o.harness_dir = opts_.harness_dir;
        o.cache_dir = opts_.cache_dir;
        o.gpu_class = arch;
        o.arch = arch;
        o.link_harness = false;
        o.sandbox = opts_.sandbox;
        o.problems_dir = opts_.problems_dir;
        return o;
      };
      b = hip ? agent::make_hip_backend(options(agent::HipBackendOptions{}))
              : agent::make_cuda_backend(options(agent::CudaBackendOptions{}));
    }
    return b.get();
  }

  agent::CompileBackendOptions opts_;
  std::mutex mu_;
  std::map<std::string, agent::BackendPtr> backends_;  // arch -> the vendor backend for it
  agent::Backend* current_ = nullptr;                  // the one this run's build used
};

}  // namespace
}  // namespace kfleet::backends

namespace kfleet::agent {

BackendPtr make_compile_backend(const CompileBackendOptions& o) {
  return std::make_unique<backends::CompileBackend>(o);
}

std::string compile_arch_for(const std::string& gpu) {
  if (gpu.rfind("sm_", 0) == 0 || gpu.rfind("gfx", 0) == 0) return gpu;
  static const std::map<std::string, std::string> known = {
      {"T4", "sm_75"},     {"A100", "sm_80"},  {"A800", "sm_80"}, {"A10", "sm_86"},
      {"A10G", "sm_86"},   {"L4", "sm_89"},    {"L40", "sm_89"},  {"L40S", "sm_89"},
      {"H100", "sm_90a"},  {"H800", "sm_90a"}, {"H200", "sm_90a"}, {"GH200", "sm_90a"},
      {"V100", "sm_70"}};
  std::string up;
  for (char ch : gpu) up += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto it = known.find(up);
  return it == known.end() ? "" : it->second;
}

}  // namespace kfleet::agent
