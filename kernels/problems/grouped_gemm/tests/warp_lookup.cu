// A SHORTCUT grouped GEMM (right for up to 32 experts, wrong at the edge): each row's group is
// found with one warp vote, lane g holding ends[g] (__ballot_sync(ends[lane] <= m), then
// __popc), instead of a scan or a binary search over the ends. Mixtral has 8 experts and the
// benign cases at most 32; the case `stress` has 64, of which the vote sees the first 32: rows
// of groups 32 and up are multiplied by expert 31's weight or a later row's. The harness must
// reject it on that case, naming output out's tolerance check.
// kernels/tests/problems_shortcuts_gtest.cpp runs the same arithmetic on the CPU. CUDA.
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { A = 0, W = 1, ENDS = 2, OUT = 3, NUM_TENSORS = 4 };
enum { DIM_G = 0, DIM_M = 1, DIM_N = 2, DIM_K = 3 };

// One warp per (row, 32 columns): the vote needs every lane of the warp.
__global__ void grouped_gemm_rows(kfleet_problem_args a) {
  const size_t G = (size_t)a.dims[DIM_G], M = (size_t)a.dims[DIM_M], N = (size_t)a.dims[DIM_N],
               K = (size_t)a.dims[DIM_K];
  const unsigned lane = threadIdx.x;
  const size_t m = blockIdx.y;
  const size_t n = (size_t)blockIdx.x * 32 + lane;
  const int32_t* ends = static_cast<const int32_t*>(a.tensors[ENDS].data);
  const bool done = lane < G && (size_t)ends[lane] <= m;  // lanes past G (or 32 groups) vote no
  size_t g = (size_t)__popc(__ballot_sync(0xFFFFFFFFu, done));
  if (g > G - 1) g = G - 1;
  if (m >= M || n >= N) return;
  const uint16_t* A_ = static_cast<const uint16_t*>(a.tensors[A].data) + m * K;
  const uint16_t* W_ = static_cast<const uint16_t*>(a.tensors[W].data) + (g * N + n) * K;
  float acc = 0.0f;
  for (size_t k = 0; k < K; ++k) acc += kfleet_bf16_bits_to_float(A_[k]) * kfleet_bf16_bits_to_float(W_[k]);
  static_cast<uint16_t*>(a.tensors[OUT].data)[m * N + n] = kfleet_float_to_bf16_bits(acc);
}

}  // namespace

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_PROBLEM_ABI_VERSION || args->num_tensors != NUM_TENSORS ||
      strncmp(args->problem, "grouped_gemm", KFLEET_PROBLEM_NAME_BYTES) != 0 ||
      args->tensors[A].dtype != KFLEET_BF16 || args->tensors[W].dtype != KFLEET_BF16 ||
      args->tensors[ENDS].dtype != KFLEET_INT32 || args->tensors[OUT].dtype != KFLEET_BF16 ||
      args->dims[DIM_M] > 65535)
    return KFLEET_UNSUPPORTED;
  const dim3 blocks((unsigned)((args->dims[DIM_N] + 31) / 32), (unsigned)args->dims[DIM_M]);
  grouped_gemm_rows<<<blocks, 32, 0, stream>>>(*args);
  return KFLEET_OK;
}
