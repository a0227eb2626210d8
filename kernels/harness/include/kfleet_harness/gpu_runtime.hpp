#pragma once
// One source for CUDA and HIP: the runtime calls the harness and the reference kernels use,
// under gpu* names mapped by macro, and KFLEET_GPU_CHECK, which reports the failed call's text
// and file:line (as NVBench does) so a failure names the exact call, not just an error code.
#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__) || defined(__HIP__)
#define KFLEET_HIP 1
#include <hip/hip_runtime.h>

// clang-19 with Debian's ROCm 5.2 headers has no device library bitcode for gfx1151; building
// with -nogpulib -DKFLEET_HIP_NO_DEVICE_LIBS supplies the few work-item queries the headers
// need from compiler builtins instead. Real ROCm installs never define this.
#if defined(KFLEET_HIP_NO_DEVICE_LIBS) && defined(__HIP_DEVICE_COMPILE__)
extern "C" __device__ __attribute__((weak)) size_t __ockl_get_local_id(unsigned d) {
  return d == 0 ? __builtin_amdgcn_workitem_id_x()
                : d == 1 ? __builtin_amdgcn_workitem_id_y() : __builtin_amdgcn_workitem_id_z();
}
extern "C" __device__ __attribute__((weak)) size_t __ockl_get_group_id(unsigned d) {
  return d == 0 ? __builtin_amdgcn_workgroup_id_x()
                : d == 1 ? __builtin_amdgcn_workgroup_id_y() : __builtin_amdgcn_workgroup_id_z();
}
extern "C" __device__ __attribute__((weak)) size_t __ockl_get_local_size(unsigned d) {
  return d == 0 ? __builtin_amdgcn_workgroup_size_x()
                : d == 1 ? __builtin_amdgcn_workgroup_size_y() : __builtin_amdgcn_workgroup_size_z();
}
extern "C" __device__ __attribute__((weak)) size_t __ockl_get_num_groups(unsigned d) {
  const size_t wg = __ockl_get_local_size(d);
  const size_t grid = d == 0 ? __builtin_amdgcn_grid_size_x()
                             : d == 1 ? __builtin_amdgcn_grid_size_y() : __builtin_amdgcn_grid_size_z();
  return (grid + wg - 1) / wg;
}
// __syncthreads and __threadfence*: always the strongest (system-scope seq_cst) fence, which
// satisfies every narrower request.
extern "C" __device__ __attribute__((weak)) void __atomic_work_item_fence(__cl_mem_fence_flags,
                                                                          __memory_order,
                                                                          __memory_scope) {
  __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "");
}
#endif

#define gpuError_t hipError_t
#define gpuSuccess hipSuccess
#define gpuStream_t hipStream_t
#define gpuEvent_t hipEvent_t
#define gpuDeviceProp_t hipDeviceProp_t
#define gpuGetErrorName hipGetErrorName
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrClockRate hipDeviceAttributeClockRate
#define gpuDevAttrMemoryClockRate hipDeviceAttributeMemoryClockRate
#define gpuDevAttrMemoryBusWidth hipDeviceAttributeMemoryBusWidth
#define gpuDevAttrL2CacheSize hipDeviceAttributeL2CacheSize
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpy hipMemcpy
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemset hipMemset
#define gpuMemsetAsync hipMemsetAsync
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuStreamCreate hipStreamCreate
#define gpuFuncSetAttribute hipFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuEventCreate hipEventCreate
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventElapsedTime hipEventElapsedTime
#define KFLEET_RUNTIME_NAME "hip"
#else
#define KFLEET_CUDA 1
#include <cuda_runtime.h>

#define gpuError_t cudaError_t
#define gpuSuccess cudaSuccess
#define gpuStream_t cudaStream_t
#define gpuEvent_t cudaEvent_t
#define gpuDeviceProp_t cudaDeviceProp
#define gpuGetErrorName cudaGetErrorName
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrClockRate cudaDevAttrClockRate
#define gpuDevAttrMemoryClockRate cudaDevAttrMemoryClockRate
#define gpuDevAttrMemoryBusWidth cudaDevAttrGlobalMemoryBusWidth
#define gpuDevAttrL2CacheSize cudaDevAttrL2CacheSize
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemset cudaMemset
#define gpuMemsetAsync cudaMemsetAsync
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuStreamCreate cudaStreamCreate
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventElapsedTime cudaEventElapsedTime
#define KFLEET_RUNTIME_NAME "cuda"
#endif

// Defined by the harness: prints the protocol's error line for the current phase and exits 3.
[[noreturn]] void kfleet_harness_gpu_failure(int code, const char* name, const char* message,
                                             const char* call, const char* file, int line);

#define KFLEET_GPU_CHECK(call)                                                               \
  do {                                                                                       \
    const gpuError_t kfleet_check_err_ = (call);                                             \
    if (kfleet_check_err_ != gpuSuccess)                                                     \
      kfleet_harness_gpu_failure(static_cast<int>(kfleet_check_err_),                        \
                                 gpuGetErrorName(kfleet_check_err_),                         \
                                 gpuGetErrorString(kfleet_check_err_), #call, __FILE__,      \
                                 __LINE__);                                                  \
  } while (0)
