// WRONG ON PURPOSE (jobs/problems/rmsnorm-wrong.yaml): kernels/problems/rmsnorm/naive.cu with one
// change that a quick test could miss: it forgets the weight: y = x / rms(x), not x / rms(x) * weight.
// The correctness gate must reject it.
// A plain, correct RMSNorm for the generic problem ABI (problem_abi.h): one block per row, an
// fp32 sum of squares reduced in shared memory, one rounding to bf16. CUDA and HIP.
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
  __shared__ float partial[kThreads];
  float ss = 0.0f;
  for (size_t i = threadIdx.x; i < H; i += kThreads) {
    const float v = kfleet_bf16_bits_to_float(x[i]);
    ss += v * v;
  }
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if ((int)threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.0f / sqrtf(partial[0] / (float)H + (float)a.scalars[SCALAR_EPS].f64);
  for (size_t i = threadIdx.x; i < H; i += kThreads)
    y[i] = kfleet_float_to_bf16_bits(kfleet_bf16_bits_to_float(x[i]) * inv);
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
