#pragma once
// Where the compilers are and how to ask them for one architecture. Shared by the backends and
// the tests that compile real kernels, so both use the very same command lines.
#include <string>
#include <vector>

#include "kfleet/common/result.hpp"

namespace kfleet::backends {

// nvcc from (in order) $KFLEET_NVCC, $CUDA_HOME/bin, /usr/local/cuda/bin, PATH.
Result<std::string> find_nvcc();
// hipcc from $KFLEET_HIPCC, $ROCM_PATH/bin, /opt/rocm/bin, PATH; an error when ROCm is absent.
Result<std::string> find_hipcc();
// clang for HIP without ROCm: $KFLEET_HIP_CLANG, clang-19, /usr/lib/llvm-19/bin/clang, clang.
Result<std::string> find_hip_clang();
// llvm-readelf for AMDGPU code-object notes: llvm-readelf-19, /usr/lib/llvm-19/bin, llvm-readelf.
Result<std::string> find_llvm_readelf();

// "-arch=sm_89" for sm_89; "-gencode=arch=compute_90a,code=sm_90a" for arch-specific targets
// (sm_90a), whose features only exist in SASS for that exact GPU.
std::vector<std::string> nvcc_arch_flags(const std::string& arch);

// Device-only compile of one HIP source to a code object (no ROCm device libraries), with the
// resource remarks on stderr: what the resources gate needs when there is no hipcc.
// The HIP install whose headers (hip/hip_runtime.h) clang's --hip-path takes: $KFLEET_HIP_PATH,
// $ROCM_PATH, /opt/rocm, or /usr (Debian/Ubuntu's ROCm packages); "" when there is none.
std::string find_hip_path();

// Device-only compile of one HIP source that includes the HIP headers, with clang and no ROCm
// device libraries: the flags of the kernels_compile_hip_* tests (--hip-path, -nogpulib,
// -DKFLEET_HIP_NO_DEVICE_LIBS with the work-item shim of kfleet_harness/gpu_runtime.hpp,
// force-included so a job's own kernel links without it). `harness_include` is
// kernels/harness/include. The code object goes to `output`, resource remarks to stderr.
std::vector<std::string> hip_clang_headers_device_argv(const std::string& clang,
                                                       const std::string& arch,
                                                       const std::string& hip_path,
                                                       const std::string& harness_include,
                                                       const std::string& source,
                                                       const std::string& output);

std::vector<std::string> hip_clang_device_argv(const std::string& clang, const std::string& arch,
                                               const std::string& source,
                                               const std::string& output);

// First line of `<compiler> --version` (its last line for nvcc, which says the release);
// part of the build cache key. An error when the compiler does not run.
Result<std::string> compiler_version(const std::string& compiler);

}  // namespace kfleet::backends
