// A SHORTCUT top-k (right on scores that are positive, wrong at the edge): values are compared
// by their bf16 bits read as a signed integer, so that a (bits << 16 | ~index) key orders a row
// with one integer max per round (radix and warp-max tricks), no float compare and no tie
// logic. For floats >= 0 integer order is value order, and the k largest of the benign cases
// (router scores, logits of normal(0, 1)) are all positive; in the case `stress` every value is
// a negative log-probability, whose integer order is reversed (and -inf sorts above -0.5). The
// harness must reject it on that case, naming the values' exact check or the indices' topk
// check. kernels/tests/problems_shortcuts_gtest.cpp runs the same arithmetic on the CPU.
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { X = 0, VALUES = 1, INDICES = 2, NUM_TENSORS = 3 };
enum { DIM_R = 0, DIM_V = 1, DIM_KK = 2 };
constexpr int kThreads = 256;

// The element's key: its bits as a signed value above, its index (lowest first) below.
__device__ long long key_of(uint16_t bits, long long i) {
  return ((long long)(int16_t)bits << 32) | (0xFFFFFFFFll - i);
}

__global__ void __launch_bounds__(kThreads) topk_rows(kfleet_problem_args a) {
  const long long V = a.dims[DIM_V], KK = a.dims[DIM_KK];
  const uint16_t* x = static_cast<const uint16_t*>(a.tensors[X].data) + (size_t)blockIdx.x * V;
  uint16_t* values = static_cast<uint16_t*>(a.tensors[VALUES].data) + (size_t)blockIdx.x * KK;
  int32_t* indices = static_cast<int32_t*>(a.tensors[INDICES].data) + (size_t)blockIdx.x * KK;
  __shared__ long long best[kThreads];
  long long last = 0x7FFFFFFFFFFFFFFFll;
  for (long long j = 0; j < KK; ++j) {
    long long b = -0x7FFFFFFFFFFFFFFFll - 1;
    for (long long i = threadIdx.x; i < V; i += kThreads) {
      const long long k = key_of(x[i], i);
      if (k < last && k > b) b = k;
    }
    best[threadIdx.x] = b;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if ((int)threadIdx.x < s && best[threadIdx.x + s] > best[threadIdx.x]) best[threadIdx.x] = best[threadIdx.x + s];
      __syncthreads();
    }
    last = best[0];
    if (threadIdx.x == 0) {
      const long long i = 0xFFFFFFFFll - (last & 0xFFFFFFFFll);
      values[j] = x[i];
      indices[j] = (int32_t)i;
    }
    __syncthreads();
  }
}

}  // namespace

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_PROBLEM_ABI_VERSION || args->num_tensors != NUM_TENSORS ||
      strncmp(args->problem, "topk", KFLEET_PROBLEM_NAME_BYTES) != 0 ||
      args->tensors[X].dtype != KFLEET_BF16 || args->tensors[VALUES].dtype != KFLEET_BF16 ||
      args->tensors[INDICES].dtype != KFLEET_INT32 || args->dims[DIM_KK] > args->dims[DIM_V] ||
      args->dims[DIM_V] > 0x7FFFFFFF || args->dims[DIM_R] > 0x7FFFFFFF)
    return KFLEET_UNSUPPORTED;
  topk_rows<<<(unsigned)args->dims[DIM_R], kThreads, 0, stream>>>(*args);
  return KFLEET_OK;
}
