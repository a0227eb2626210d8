// A SHORTCUT grouped GEMM (right when rows outnumber experts, wrong at the edge): one block
// per group, and only min(G, M) blocks, "since no more groups than rows can hold a row". True,
// but the groups that hold rows are not the first M: with more experts than rows, as in the
// decode step of the case `stress` (64 experts, 24 rows), groups M and up are never computed
// and their rows never written. Every benign case has M >= G. The harness must reject it on
// that case, naming output out (elements never written).
// kernels/tests/problems_shortcuts_gtest.cpp runs the same arithmetic on the CPU.
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { A = 0, W = 1, ENDS = 2, OUT = 3, NUM_TENSORS = 4 };
enum { DIM_G = 0, DIM_M = 1, DIM_N = 2, DIM_K = 3 };
constexpr int kThreads = 256;

// Block g: the rows of group g, every column, one thread per output element.
__global__ void __launch_bounds__(kThreads) grouped_gemm_groups(kfleet_problem_args a) {
  const size_t N = (size_t)a.dims[DIM_N], K = (size_t)a.dims[DIM_K];
  const size_t g = blockIdx.x;
  const int32_t* ends = static_cast<const int32_t*>(a.tensors[ENDS].data);
  const size_t begin = g == 0 ? 0 : (size_t)ends[g - 1], end = (size_t)ends[g];
  for (size_t e = threadIdx.x; e < (end - begin) * N; e += kThreads) {
    const size_t m = begin + e / N, n = e % N;
    const uint16_t* A_ = static_cast<const uint16_t*>(a.tensors[A].data) + m * K;
    const uint16_t* W_ = static_cast<const uint16_t*>(a.tensors[W].data) + (g * N + n) * K;
    float acc = 0.0f;
    for (size_t k = 0; k < K; ++k) acc += kfleet_bf16_bits_to_float(A_[k]) * kfleet_bf16_bits_to_float(W_[k]);
    static_cast<uint16_t*>(a.tensors[OUT].data)[m * N + n] = kfleet_float_to_bf16_bits(acc);
  }
}

}  // namespace

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_PROBLEM_ABI_VERSION || args->num_tensors != NUM_TENSORS ||
      strncmp(args->problem, "grouped_gemm", KFLEET_PROBLEM_NAME_BYTES) != 0 ||
      args->tensors[A].dtype != KFLEET_BF16 || args->tensors[W].dtype != KFLEET_BF16 ||
      args->tensors[ENDS].dtype != KFLEET_INT32 || args->tensors[OUT].dtype != KFLEET_BF16)
    return KFLEET_UNSUPPORTED;
  const long long G = args->dims[DIM_G], M = args->dims[DIM_M];
  const long long groups = G < M ? G : M;  // "no more groups than rows can hold a row"
  grouped_gemm_groups<<<(unsigned)groups, kThreads, 0, stream>>>(*args);
  return KFLEET_OK;
}
