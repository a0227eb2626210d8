// A SHORTCUT RMSNorm (right on benign activations, wrong at the edge): the sum of squares in
// fp16 (__hfma per element, __hadd in the block's tree), twice the rate of fp32 on the CUDA
// cores and half the shared memory. With activations of std 2 every square and sum stays far
// below 65504 and the rms is within 0.2 %; in the case `stress` a few massive channels of 500 to
// 3000 square past 65504: the sum is inf and every y of the row becomes 0. The harness must
// reject it on that case, naming output y's tolerance check. kernels/tests/problems_shortcuts_gtest.cpp
// runs the same arithmetic on the CPU (each fp16 operation rounded once). CUDA.
#include <cuda_fp16.h>
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

// Slots and dimensions in problem.yaml's order.
enum { X = 0, WEIGHT = 1, Y = 2, NUM_TENSORS = 3 };
enum { DIM_T = 0, DIM_H = 1 };
enum { SCALAR_EPS = 0 };
constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) rmsnorm_rows(kfleet_problem_args a) {
  const size_t H = (size_t)a.dims[DIM_H];
  const size_t t = blockIdx.x;
  const uint16_t* x = static_cast<const uint16_t*>(a.tensors[X].data) + t * H;
  const uint16_t* w = static_cast<const uint16_t*>(a.tensors[WEIGHT].data);
  uint16_t* y = static_cast<uint16_t*>(a.tensors[Y].data) + t * H;
  __shared__ __half partial[kThreads];
  __half ss = __float2half(0.0f);
  for (size_t i = threadIdx.x; i < H; i += kThreads) {
    const __half v = __float2half(kfleet_bf16_bits_to_float(x[i]));
    ss = __hfma(v, v, ss);
  }
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if ((int)threadIdx.x < s) partial[threadIdx.x] = __hadd(partial[threadIdx.x], partial[threadIdx.x + s]);
    __syncthreads();
  }
  const float inv = 1.0f / sqrtf(__half2float(partial[0]) / (float)H + (float)a.scalars[SCALAR_EPS].f64);
  for (size_t i = threadIdx.x; i < H; i += kThreads)
    y[i] = kfleet_float_to_bf16_bits(kfleet_bf16_bits_to_float(x[i]) * inv * kfleet_bf16_bits_to_float(w[i]));
}

}  // namespace

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_PROBLEM_ABI_VERSION || args->num_tensors != NUM_TENSORS ||
      strncmp(args->problem, "rmsnorm", KFLEET_PROBLEM_NAME_BYTES) != 0 ||
      args->tensors[X].dtype != KFLEET_BF16 || args->tensors[WEIGHT].dtype != KFLEET_BF16 ||
      args->tensors[Y].dtype != KFLEET_BF16 || args->dims[DIM_T] > 0x7FFFFFFF)
    return KFLEET_UNSUPPORTED;
  rmsnorm_rows<<<(unsigned)args->dims[DIM_T], kThreads, 0, stream>>>(*args);
  return KFLEET_OK;
}
