// WRONG ON PURPOSE (jobs/problems/softmax-wrong.yaml): kernels/problems/softmax/naive.cu with one
// change that a quick test could miss: it sums the exponentials of the first 256 columns only (one pass of the block, not a loop).
// The correctness gate must reject it.
// A plain, correct row softmax for the generic problem ABI (problem_abi.h): one block per row,
// three passes (max, sum of exp, write), fp32 throughout, one rounding to fp16.
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { X = 0, Y = 1, NUM_TENSORS = 2 };
enum { DIM_R = 0, DIM_V = 1 };
constexpr int kThreads = 256;

// Reduces v over the block with op; every thread gets the result.
template <class Op>
__device__ float block_reduce(float v, float* scratch, Op op) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if ((int)threadIdx.x < s) scratch[threadIdx.x] = op(scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  const float r = scratch[0];
  __syncthreads();
  return r;
}

struct Max { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct Sum { __device__ float operator()(float a, float b) const { return a + b; } };

__global__ void __launch_bounds__(kThreads) softmax_rows(kfleet_problem_args a) {
  const size_t V = (size_t)a.dims[DIM_V];
  const uint16_t* x = static_cast<const uint16_t*>(a.tensors[X].data) + (size_t)blockIdx.x * V;
  uint16_t* y = static_cast<uint16_t*>(a.tensors[Y].data) + (size_t)blockIdx.x * V;
  __shared__ float scratch[kThreads];
  float mx = -INFINITY;
  for (size_t i = threadIdx.x; i < V; i += kThreads) mx = fmaxf(mx, kfleet_half_bits_to_float(x[i]));
  mx = block_reduce(mx, scratch, Max());
  float sum = 0.0f;
  if (threadIdx.x < V) sum += expf(kfleet_half_bits_to_float(x[threadIdx.x]) - mx);
  sum = block_reduce(sum, scratch, Sum());
  const float inv = 1.0f / sum;
  for (size_t i = threadIdx.x; i < V; i += kThreads)
    y[i] = kfleet_float_to_half_bits(expf(kfleet_half_bits_to_float(x[i]) - mx) * inv);
}

}  // namespace

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_PROBLEM_ABI_VERSION || args->num_tensors != NUM_TENSORS ||
      strncmp(args->problem, "softmax", KFLEET_PROBLEM_NAME_BYTES) != 0 ||
      args->tensors[X].dtype != KFLEET_FP16 || args->tensors[Y].dtype != KFLEET_FP16 ||
      args->dims[DIM_R] > 0x7FFFFFFF)
    return KFLEET_UNSUPPORTED;
  softmax_rows<<<(unsigned)args->dims[DIM_R], kThreads, 0, stream>>>(*args);
  return KFLEET_OK;
}
