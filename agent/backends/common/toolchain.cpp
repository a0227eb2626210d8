#include "common/toolchain.hpp"

#include <cstdlib>
#include <filesystem>
#include <initializer_list>

#include "common/subprocess.hpp"

namespace kfleet::backends {
namespace {

std::string env_or(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Result<std::string> first_found(std::initializer_list<std::string> candidates,
                                const std::string& what, const std::string& hint) {
  std::string tried;
  for (const auto& c : candidates) {
    if (c.empty() || c == "/bin/nvcc" || c == "/bin/hipcc") continue;  // unset $X_HOME
    if (auto p = find_program(c); !p.empty()) return p;
    tried += (tried.empty() ? "" : ", ") + c;
  }
  return make_error(Errc::unavailable, what + " not found (tried " + tried + "); " + hint);
}

}  // namespace

Result<std::string> find_nvcc() {
  return first_found({env_or("KFLEET_NVCC"), env_or("CUDA_HOME") + "/bin/nvcc",
                      "/usr/local/cuda/bin/nvcc", "nvcc"},
                     "nvcc", "install the CUDA toolkit or set KFLEET_NVCC");
}

Result<std::string> find_hipcc() {
  return first_found({env_or("KFLEET_HIPCC"), env_or("ROCM_PATH") + "/bin/hipcc",
                      "/opt/rocm/bin/hipcc", "hipcc"},
                     "hipcc", "install ROCm or set KFLEET_HIPCC");
}

Result<std::string> find_hip_clang() {
  return first_found({env_or("KFLEET_HIP_CLANG"), "clang-19", "/usr/lib/llvm-19/bin/clang",
                      "clang"},
                     "clang for HIP", "install clang-19 (apt install clang-19 lld-19)");
}

Result<std::string> find_llvm_readelf() {
  return first_found({"llvm-readelf-19", "/usr/lib/llvm-19/bin/llvm-readelf", "llvm-readelf"},
                     "llvm-readelf", "install llvm-19");
}

std::vector<std::string> nvcc_arch_flags(const std::string& arch) {
  if (!arch.empty() && (arch.back() == 'a' || arch.back() == 'f')) {
    std::string num = arch.substr(3);  // "90a"
    return {"-gencode=arch=compute_" + num + ",code=" + arch};
  }
  return {"-arch=" + arch};
}

std::vector<std::string> hip_clang_device_argv(const std::string& clang, const std::string& arch,
                                               const std::string& source,
                                               const std::string& output) {
  return {clang, "-x", "hip", "--offload-arch=" + arch, "-nogpulib", "-nogpuinc",
          "--cuda-device-only", "--no-gpu-bundle-output", "-O3",
          "-Rpass-analysis=kernel-resource-usage", "-o", output, source};
}

std::string find_hip_path() {
  for (const std::string& dir : {env_or("KFLEET_HIP_PATH"), env_or("ROCM_PATH"),
                                 std::string("/opt/rocm"), std::string("/usr")}) {
    if (!dir.empty() && std::filesystem::exists(dir + "/include/hip/hip_runtime.h")) return dir;
  }
  return "";
}

std::vector<std::string> hip_clang_headers_device_argv(const std::string& clang,
                                                       const std::string& arch,
                                                       const std::string& hip_path,
                                                       const std::string& harness_include,
                                                       const std::string& source,
                                                       const std::string& output) {
  return {clang, "-std=c++17", "-x", "hip", "--offload-arch=" + arch, "-nogpulib",
          "--hip-path=" + hip_path, "-DKFLEET_HIP_NO_DEVICE_LIBS", "-I" + harness_include,
          "-include", "kfleet_harness/gpu_runtime.hpp", "--cuda-device-only",
          "--no-gpu-bundle-output", "-O3", "-Rpass-analysis=kernel-resource-usage", "-c",
          "-o", output, source};
}

Result<std::string> compiler_version(const std::string& compiler) {
  SubprocessSpec s;
  s.argv = {compiler, "--version"};
  s.timeout_s = 60;
  s.trust = ProcessTrust::agent_tool;  // the agent's own compiler, no job input
  auto r = run_subprocess(s);
  if (!r.ok()) return r.error();
  if (!r->ok()) {
    return make_error(Errc::unavailable, "'" + compiler + " --version' failed: " + r->describe());
  }
  std::string text = r->out;
  bool nvcc = compiler.find("nvcc") != std::string::npos;
  std::string line = nvcc ? tail_lines(text, 1) : text.substr(0, text.find('\n'));
  return line;
}

}  // namespace kfleet::backends
