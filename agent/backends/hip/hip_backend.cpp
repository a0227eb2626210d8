// The HIP backend: hipcc where ROCm is installed, else clang-19 (a device-only compile: the
// resources gate works, running needs ROCm); resource remarks for the gate; sysfs and rocm-smi
// for GPU state; rocprofv3 for profiles.
#include <unistd.h>

#include <filesystem>

#include "common/harness_backend.hpp"
#include "kfleet/common/log.hpp"
#include "common/toolchain.hpp"
#include "discovery/amd.hpp"

namespace kfleet::backends {
namespace {

class HipBackend final : public HarnessBackend {
 public:
  explicit HipBackend(const agent::HipBackendOptions& o)
      : HarnessBackend({o.harness_dir, o.gpu_class, o.arch, o.device, o.cache_dir,
                        o.require_exclusive, o.busy_wait_s, o.link_harness, o.throttle_pct,
                        o.sandbox}),
        opts_(o) {
    if (!o.problems_dir.empty()) cfg_.problems_dir = o.problems_dir;
  }

  std::string name() const override { return "hip"; }

  Result<std::vector<GpuInfo>> discover() override {
    auto gpus = discover_amd_gpus();
    if (gpus.empty()) return make_error(Errc::not_found, "no AMD GPU in /sys/class/kfd (is amdgpu loaded?)");
    for (auto& g : gpus) {
      if (!cfg_.gpu_class.empty()) g.gpu_class = cfg_.gpu_class;
      if (!cfg_.arch.empty()) g.arch = cfg_.arch;
      if (auto s = amd_snapshot(g.extra.value("index", 0u)); s.ok()) g.extra["snapshot"] = s->to_json();
    }
    if (cfg_.device < gpus.size() && cfg_.arch.empty()) cfg_.arch = gpus[cfg_.device].arch;
    if (cfg_.device < gpus.size()) kfd_gpu_id_ = gpus[cfg_.device].extra.value("kfd_gpu_id", 0L);
    // By index: discovery lists KFD nodes in the order the ROCm runtime enumerates them.
    pin_children(gpus, "HIP_VISIBLE_DEVICES", /*by_uuid=*/false);
    return gpus;
  }

 protected:
  Result<Compiler> compiler() override {
    if (cfg_.arch.empty()) {
      if (auto d = discover(); !d.ok()) {
        return make_error(Errc::unavailable, "no gfx arch known: " + d.error().message);
      }
    }
    if (compiler_) return *compiler_;
    Result<std::string> path = make_error(Errc::unavailable, "");
    if (!opts_.hipcc.empty()) {
      path = opts_.hipcc;
    } else if (auto h = find_hipcc(); h.ok()) {
      path = h;
    }
    hipcc_ = path.ok();
    if (!hipcc_) {
      path = opts_.clang.empty() ? find_hip_clang() : Result<std::string>(opts_.clang);
      if (!path.ok()) return path.error();
    }
    auto version = compiler_version(*path);
    if (!version.ok()) return version.error();
    compiler_ = Compiler{*path, *version};
    return *compiler_;
  }

  std::vector<std::string> compile_argv(const Compiler& cc, const std::string& arch,
                                        const std::vector<std::string>& flags,
                                        const std::string& source,
                                        const std::string& object) override {
    if (!hipcc_) {
      // No ROCm: device code only, enough for the resource report. With HIP headers installed
      // (Debian's ROCm packages), the same flags as the kernels_compile_hip_* tests, so that
      // sources including <hip/hip_runtime.h> build; without them, no HIP headers at all.
      const std::string hip_path = find_hip_path();
      auto a = hip_path.empty()
                   ? hip_clang_device_argv(cc.path, arch, source, object)
                   : hip_clang_headers_device_argv(cc.path, arch, hip_path,
                                                   cfg_.harness_dir + "/include", source, object);
      a.insert(a.end() - 1, flags.begin(), flags.end());
      return a;
    }
    std::vector<std::string> a = {cc.path, "-std=c++17", "-O3", "-x", "hip",
                                  "--offload-arch=" + arch, "-Rpass-analysis=kernel-resource-usage"};
    a.insert(a.end(), flags.begin(), flags.end());
    a.insert(a.end(), {"-c", source, "-o", object});
    return a;
  }

  std::optional<std::vector<std::string>> harness_compile_argv(
      const Compiler& cc, const std::string& arch, const std::vector<std::string>& flags,
      const std::string& source, const std::string& object) override {
    if (!hipcc_) return std::nullopt;
    const bool device = source.size() > 3 && source.compare(source.size() - 3, 3, ".cu") == 0;
    std::vector<std::string> a = {cc.path, "-std=c++17", "-O3", "--offload-arch=" + arch,
                                  "-x", device ? "hip" : "c++"};
    a.insert(a.end(), flags.begin(), flags.end());
    a.insert(a.end(), {"-c", source, "-o", object});
    return a;
  }

  std::vector<std::string> link_argv(const Compiler& cc, const std::string& arch,
                                     const std::vector<std::string>& flags,
                                     const std::vector<std::string>& objects,
                                     const std::string& output) override {
    std::vector<std::string> a = {cc.path, "-std=c++17", "-O3", "--offload-arch=" + arch};
    a.insert(a.end(), flags.begin(), flags.end());
    a.insert(a.end(), objects.begin(), objects.end());
    a.insert(a.end(), {"-o", output});
    return a;
  }

  std::vector<ResourceUsage> parse_resources(const std::string& log, const std::string& arch) override {
    return parse_amdgpu_remarks(log, arch);
  }

  Result<GpuSnapshot> snapshot() override { return amd_snapshot(cfg_.device); }

  // Power cap, clock levels, partition and performance level through amd-smi: read before and
  // after each GPU stage, a change fails the run at the integrity gate. Without amd-smi nothing
  // is checked (as the CUDA backend without NVML), said once in the log.
  std::optional<nlohmann::json> gpu_settings() override {
    auto s = amd_settings(cfg_.device);
    if (s.ok()) return *s;
    if (!settings_warned_) {
      log::warn("hip", "the GPU's settings are not checked: ", s.error().message);
      settings_warned_ = true;
    }
    return std::nullopt;
  }

  // KFD lists every process with compute queues or VRAM on each GPU (no ROCm tool needed).
  Result<std::vector<unsigned>> other_processes() override {
    if (!std::filesystem::exists("/sys/class/kfd/kfd/proc"))
      return make_error(Errc::unavailable, "/sys/class/kfd/kfd/proc is missing (is amdgpu loaded?)");
    return amd_compute_processes("/sys", static_cast<unsigned long>(kfd_gpu_id_),
                                 static_cast<unsigned>(::getpid()));
  }

  Result<ProfileCommand> profile_argv(const ProfileSpec& p, const std::vector<std::string>& kernels,
                                      const std::vector<std::string>& cmd,
                                      const std::string& out_dir) override {
    std::string tool = find_program("rocprofv3");
    if (tool.empty()) tool = find_program("/opt/rocm/bin/rocprofv3");
    if (tool.empty()) return make_error(Errc::unavailable, "rocprofv3 not found: install ROCm's rocprofiler-sdk");
    return rocprofv3_profile_command(tool, p, kernels, cmd, out_dir);
  }

 private:
  agent::HipBackendOptions opts_;
  bool hipcc_ = false;
  bool settings_warned_ = false;
  long kfd_gpu_id_ = 0;  // this agent's GPU in KFD's numbering; 0 until discovered (= any GPU)
  std::optional<Compiler> compiler_;
};

}  // namespace
}  // namespace kfleet::backends

namespace kfleet::agent {
BackendPtr make_hip_backend(const HipBackendOptions& o) {
  return std::make_unique<backends::HipBackend>(o);
}
}  // namespace kfleet::agent
