// A SHORTCUT top-k (right on finite scores, wrong at the edge): each row keeps a running
// sorted list of k (value, index) pairs, started from (-inf, -1), and inserts an element only
// when it is larger than the list's last value. One pass over the row instead of k; on rows of
// finite values every slot fills. In the case `stress` some rows hold fewer finite values than
// k (the rest -inf, masked tokens): -inf is never larger than -inf, so those slots keep index
// -1. The harness must reject it on that case, naming output indices' topk check.
// kernels/tests/problems_shortcuts_gtest.cpp runs the same arithmetic on the CPU.
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { X = 0, VALUES = 1, INDICES = 2, NUM_TENSORS = 3 };
enum { DIM_R = 0, DIM_V = 1, DIM_KK = 2 };
constexpr int kMaxK = 64;

// One thread per row (rows are short next to the sort they replace).
__global__ void topk_rows(kfleet_problem_args a) {
  const long long R = a.dims[DIM_R], V = a.dims[DIM_V], KK = a.dims[DIM_KK];
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const uint16_t* x = static_cast<const uint16_t*>(a.tensors[X].data) + r * V;
  float best_v[kMaxK];
  int best_i[kMaxK];
  for (int j = 0; j < KK; ++j) {
    best_v[j] = -INFINITY;
    best_i[j] = -1;
  }
  for (long long i = 0; i < V; ++i) {
    const float v = kfleet_bf16_bits_to_float(x[i]);
    if (!(v > best_v[KK - 1])) continue;
    int j = (int)KK - 1;
    while (j > 0 && v > best_v[j - 1]) {
      best_v[j] = best_v[j - 1];
      best_i[j] = best_i[j - 1];
      --j;
    }
    best_v[j] = v;
    best_i[j] = (int)i;
  }
  uint16_t* values = static_cast<uint16_t*>(a.tensors[VALUES].data) + r * KK;
  int32_t* indices = static_cast<int32_t*>(a.tensors[INDICES].data) + r * KK;
  for (int j = 0; j < KK; ++j) {
    values[j] = kfleet_float_to_bf16_bits(best_v[j]);
    indices[j] = best_i[j];
  }
}

}  // namespace

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_PROBLEM_ABI_VERSION || args->num_tensors != NUM_TENSORS ||
      strncmp(args->problem, "topk", KFLEET_PROBLEM_NAME_BYTES) != 0 ||
      args->tensors[X].dtype != KFLEET_BF16 || args->tensors[VALUES].dtype != KFLEET_BF16 ||
      args->tensors[INDICES].dtype != KFLEET_INT32 || args->dims[DIM_KK] > kMaxK ||
      args->dims[DIM_KK] > args->dims[DIM_V] || args->dims[DIM_R] > 0x7FFFFFFF)
    return KFLEET_UNSUPPORTED;
  const long long R = args->dims[DIM_R];
  topk_rows<<<(unsigned)((R + 63) / 64), 64, 0, stream>>>(*args);
  return KFLEET_OK;
}
