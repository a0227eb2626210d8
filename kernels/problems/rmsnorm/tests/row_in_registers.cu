// A SHORTCUT RMSNorm (right on every model up to 70B, wrong at the edge): the row is read once
// into registers, 8 values per thread of a 1024-thread block, and normalised from there, which
// saves the second read of x. It assumes H <= 8192 (Llama-3-70B's hidden size, the largest of the
// benign cases); the case `stress` has Llama-3.1-405B's 16384, of which it normalises and writes
// the first 8192 only. The harness must reject it on that case, naming output y (elements never
// written). kernels/tests/problems_shortcuts_gtest.cpp runs the same arithmetic on the CPU.
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

// Slots and dimensions in problem.yaml's order.
enum { X = 0, WEIGHT = 1, Y = 2, NUM_TENSORS = 3 };
enum { DIM_T = 0, DIM_H = 1 };
enum { SCALAR_EPS = 0 };
constexpr int kThreads = 1024, kPerThread = 8;  // H <= 8192

__global__ void __launch_bounds__(kThreads) rmsnorm_rows(kfleet_problem_args a) {
  const size_t H = (size_t)a.dims[DIM_H];
  const size_t t = blockIdx.x;
  const uint16_t* x = static_cast<const uint16_t*>(a.tensors[X].data) + t * H;
  const uint16_t* w = static_cast<const uint16_t*>(a.tensors[WEIGHT].data);
  uint16_t* y = static_cast<uint16_t*>(a.tensors[Y].data) + t * H;
  __shared__ float partial[kThreads];
  float v[kPerThread];
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const size_t i = threadIdx.x + (size_t)j * kThreads;
    v[j] = i < H ? kfleet_bf16_bits_to_float(x[i]) : 0.0f;
    ss += v[j] * v[j];
  }
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if ((int)threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.0f / sqrtf(partial[0] / (float)H + (float)a.scalars[SCALAR_EPS].f64);
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const size_t i = threadIdx.x + (size_t)j * kThreads;
    if (i < H) y[i] = kfleet_float_to_bf16_bits(v[j] * inv * kfleet_bf16_bits_to_float(w[i]));
  }
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
