// A SHORTCUT softmax (right on benign logits, wrong at the edge): the row is shifted by its
// first logit instead of its maximum ("any shift works"), which saves the max pass and its
// block reduction. On logits of normal(0, 3) every x - x[0] stays far below 88, so the result
// is the stable one; in the case `stress` rows spread up to std 1500, so exp(x - x[0]) overflows
// to inf for logits 88 above the first (inf / inf: NaN). The harness must reject it on that case,
// naming output y's tolerance check. kernels/tests/problems_shortcuts_gtest.cpp runs the same
// arithmetic on the CPU.
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { X = 0, Y = 1, NUM_TENSORS = 2 };
enum { DIM_R = 0, DIM_V = 1 };
constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) softmax_rows(kfleet_problem_args a) {
  const size_t V = (size_t)a.dims[DIM_V];
  const uint16_t* x = static_cast<const uint16_t*>(a.tensors[X].data) + (size_t)blockIdx.x * V;
  uint16_t* y = static_cast<uint16_t*>(a.tensors[Y].data) + (size_t)blockIdx.x * V;
  __shared__ float scratch[kThreads];
  const float shift = kfleet_half_bits_to_float(x[0]);
  float sum = 0.0f;
  for (size_t i = threadIdx.x; i < V; i += kThreads) sum += expf(kfleet_half_bits_to_float(x[i]) - shift);
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if ((int)threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.0f / scratch[0];
  for (size_t i = threadIdx.x; i < V; i += kThreads)
    y[i] = kfleet_float_to_half_bits(expf(kfleet_half_bits_to_float(x[i]) - shift) * inv);
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
