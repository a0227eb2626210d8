// WRONG ON PURPOSE (jobs/problems/grouped_gemm-wrong.yaml): kernels/problems/grouped_gemm/naive.cu with one
// change that a quick test could miss: it off by one at group boundaries: the first row of each group is multiplied by the previous group's weights.
// The correctness gate must reject it.
// A plain, correct grouped GEMM for the generic problem ABI (problem_abi.h): one thread per
// output element; its row's group found by scanning the ends; fp32 accumulation, bf16 out.
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { A = 0, W = 1, ENDS = 2, OUT = 3, NUM_TENSORS = 4 };
enum { DIM_G = 0, DIM_M = 1, DIM_N = 2, DIM_K = 3 };

__global__ void grouped_gemm_elements(kfleet_problem_args a) {
  const size_t G = (size_t)a.dims[DIM_G], M = (size_t)a.dims[DIM_M], N = (size_t)a.dims[DIM_N],
               K = (size_t)a.dims[DIM_K];
  const size_t n = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t m = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= M || n >= N) return;
  const int32_t* ends = static_cast<const int32_t*>(a.tensors[ENDS].data);
  size_t g = 0;
  while (g + 1 < G && (size_t)ends[g] < m) ++g;
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
      (args->dims[DIM_M] + 15) / 16 > 65535)
    return KFLEET_UNSUPPORTED;
  const dim3 threads(16, 16);
  const dim3 blocks((unsigned)((args->dims[DIM_N] + 15) / 16), (unsigned)((args->dims[DIM_M] + 15) / 16));
  grouped_gemm_elements<<<blocks, threads, 0, stream>>>(*args);
  return KFLEET_OK;
}
