// WRONG ON PURPOSE (jobs/problems/topk-wrong.yaml): kernels/problems/topk/naive.cu with one
// change that a quick test could miss: the k-th value is read from the element after the k-th
// largest. (Ranking the bf16 bits decoded as fp16 is not wrong: both orders follow the bits.)
// The correctness gate must reject it.
// A plain, correct top-k for the generic problem ABI (problem_abi.h): one block per row, k
// rounds of a block-wide arg-max over the elements after the last one taken, in the order
// (value descending, index ascending), so no scratch memory is needed and ties come out
// lowest index first.
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { X = 0, VALUES = 1, INDICES = 2, NUM_TENSORS = 3 };
enum { DIM_R = 0, DIM_V = 1, DIM_KK = 2 };
constexpr int kThreads = 256;

// Does (v1, i1) come before (v2, i2) in the output order?
__device__ bool before(float v1, long long i1, float v2, long long i2) {
  return v1 > v2 || (v1 == v2 && i1 < i2);
}

__global__ void __launch_bounds__(kThreads) topk_rows(kfleet_problem_args a) {
  const long long V = a.dims[DIM_V], KK = a.dims[DIM_KK];
  const uint16_t* x = static_cast<const uint16_t*>(a.tensors[X].data) + (size_t)blockIdx.x * V;
  uint16_t* values = static_cast<uint16_t*>(a.tensors[VALUES].data) + (size_t)blockIdx.x * KK;
  int32_t* indices = static_cast<int32_t*>(a.tensors[INDICES].data) + (size_t)blockIdx.x * KK;
  __shared__ float best_v[kThreads];
  __shared__ long long best_i[kThreads];
  float last_v = INFINITY;
  long long last_i = -1;
  for (long long j = 0; j < KK; ++j) {
    float bv = -INFINITY;
    long long bi = -1;
    for (long long i = threadIdx.x; i < V; i += kThreads) {
      const float v = kfleet_bf16_bits_to_float(x[i]);
      if (before(last_v, last_i, v, i) && (bi < 0 || before(v, i, bv, bi))) {
        bv = v;
        bi = i;
      }
    }
    best_v[threadIdx.x] = bv;
    best_i[threadIdx.x] = bi;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if ((int)threadIdx.x < s) {
        const long long oi = best_i[threadIdx.x + s];
        if (oi >= 0 && (best_i[threadIdx.x] < 0 || before(best_v[threadIdx.x + s], oi, best_v[threadIdx.x], best_i[threadIdx.x]))) {
          best_v[threadIdx.x] = best_v[threadIdx.x + s];
          best_i[threadIdx.x] = oi;
        }
      }
      __syncthreads();
    }
    last_v = best_v[0];
    last_i = best_i[0];
    if (threadIdx.x == 0) {
      values[j] = j + 1 == KK ? x[(last_i + 1) % V] : x[last_i];  // WRONG: the last value
      indices[j] = (int32_t)last_i;
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
