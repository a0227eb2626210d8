// The CUDA backend: nvcc with ptxas -v for the resources gate, NVML for discovery, GPU state and
// exclusivity, ncu for profiles.
#include <mutex>

#include "common/harness_backend.hpp"
#include "common/toolchain.hpp"
#include "discovery/nvml.hpp"

namespace kfleet::backends {
namespace {

class CudaBackend final : public HarnessBackend {
 public:
  explicit CudaBackend(const agent::CudaBackendOptions& o)
      : HarnessBackend({o.harness_dir, o.gpu_class, o.arch, o.device, o.cache_dir,
                        o.require_exclusive, o.busy_wait_s, o.link_harness, o.throttle_pct,
                        o.sandbox, o.python}),
        nvcc_override_(o.nvcc) {
    if (!o.problems_dir.empty()) cfg_.problems_dir = o.problems_dir;
    cfg_.reference_timeout_s = o.reference_timeout_s;
  }

  std::string name() const override { return "cuda"; }

  Result<std::vector<GpuInfo>> discover() override {
    auto n = nvml();
    if (!n.ok()) return n.error();
    auto devs = (*n)->devices();
    if (!devs.ok()) return devs.error();
    if (devs->empty()) return make_error(Errc::not_found, "NVML reports no NVIDIA GPUs");
    for (auto& g : *devs) {
      if (!cfg_.gpu_class.empty()) g.gpu_class = cfg_.gpu_class;
      if (!cfg_.arch.empty()) g.arch = cfg_.arch;
    }
    if (cfg_.device < devs->size()) {
      if (cfg_.arch.empty()) cfg_.arch = (*devs)[cfg_.device].arch;
      if (cfg_.gpu_class.empty()) cfg_.gpu_class = (*devs)[cfg_.device].gpu_class;
    }
    // By UUID: CUDA's device order (fastest first) need not be NVML's (PCI order).
    pin_children(*devs, "CUDA_VISIBLE_DEVICES", /*by_uuid=*/true);
    // The Python that records triton and torch jobs: what it can record goes with the GPU, and
    // the scheduler offers Python jobs by it (kfleet::gpu_runs_language).
    report_python(*devs);
    return devs;
  }

 protected:
  Result<Compiler> compiler() override {
    if (cfg_.arch.empty()) {
      // Builds before discovery (or on a build-only host) need an arch to aim at.
      if (auto d = discover(); !d.ok()) {
        return make_error(Errc::unavailable,
                          "no CUDA arch known: " + d.error().message + " (set the backend's arch)");
      }
    }
    if (compiler_) return *compiler_;
    auto path = nvcc_override_.empty() ? find_nvcc() : Result<std::string>(nvcc_override_);
    if (!path.ok()) return path.error();
    auto version = compiler_version(*path);
    if (!version.ok()) return version.error();
    compiler_ = Compiler{*path, *version};
    return *compiler_;
  }

  // nvcc for this arch with `extra` options, then the job's or harness's flags, then `tail`.
  static std::vector<std::string> nvcc(const Compiler& cc, const std::string& arch,
                                       std::initializer_list<const char*> extra,
                                       const std::vector<std::string>& flags,
                                       const std::vector<std::string>& tail) {
    std::vector<std::string> a = {cc.path, "-std=c++17", "-O3", "-lineinfo"};
    a.insert(a.end(), extra.begin(), extra.end());
    for (auto& f : nvcc_arch_flags(arch)) a.push_back(f);
    a.insert(a.end(), flags.begin(), flags.end());
    a.insert(a.end(), tail.begin(), tail.end());
    return a;
  }

  // The job's sources, with ptxas's resource report (-Xptxas -v) for the resources gate.
  std::vector<std::string> compile_argv(const Compiler& cc, const std::string& arch,
                                        const std::vector<std::string>& flags,
                                        const std::string& source,
                                        const std::string& object) override {
    return nvcc(cc, arch, {"-Xptxas", "-v"}, flags, {"-c", source, "-o", object});
  }

  std::optional<std::vector<std::string>> harness_compile_argv(
      const Compiler& cc, const std::string& arch, const std::vector<std::string>& flags,
      const std::string& source, const std::string& object) override {
    return nvcc(cc, arch, {}, flags, {"-c", source, "-o", object});
  }

  std::vector<std::string> link_argv(const Compiler& cc, const std::string& arch,
                                     const std::vector<std::string>& flags,
                                     const std::vector<std::string>& objects,
                                     const std::string& output) override {
    std::vector<std::string> tail = objects;
    tail.insert(tail.end(), {"-o", output});
    return nvcc(cc, arch, {}, flags, tail);
  }

  std::vector<ResourceUsage> parse_resources(const std::string& log, const std::string&) override {
    return parse_ptxas_verbose(log);
  }

  Result<GpuSnapshot> snapshot() override {
    auto n = nvml();
    if (!n.ok()) return n.error();
    return (*n)->snapshot(cfg_.device);
  }

  std::optional<nlohmann::json> gpu_settings() override {
    auto n = nvml();
    if (!n.ok()) return std::nullopt;
    auto s = (*n)->settings(cfg_.device);
    if (!s.ok()) return std::nullopt;
    return *s;
  }

  Result<std::vector<unsigned>> other_processes() override {
    auto n = nvml();
    if (!n.ok()) return n.error();
    return (*n)->compute_processes(cfg_.device);
  }

  Result<ProfileCommand> profile_argv(const ProfileSpec& p, const std::vector<std::string>& kernels,
                                      const std::vector<std::string>& cmd,
                                      const std::string& out_dir) override {
    std::string ncu = find_program("ncu");
    if (ncu.empty()) ncu = find_program("/usr/local/cuda/bin/ncu");
    if (ncu.empty()) return make_error(Errc::unavailable, "ncu not found: install Nsight Compute");
    return ncu_profile_command(ncu, p, kernels, cmd, out_dir);
  }

 private:
  Result<std::shared_ptr<Nvml>> nvml() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!nvml_) {
      auto n = Nvml::load();
      if (!n.ok()) return n.error();
      nvml_ = *n;
    }
    return nvml_;
  }

  std::string nvcc_override_;
  std::optional<Compiler> compiler_;
  std::mutex mu_;
  std::shared_ptr<Nvml> nvml_;
};

}  // namespace
}  // namespace kfleet::backends

namespace kfleet::agent {
BackendPtr make_cuda_backend(const CudaBackendOptions& o) {
  return std::make_unique<backends::CudaBackend>(o);
}
}  // namespace kfleet::agent
