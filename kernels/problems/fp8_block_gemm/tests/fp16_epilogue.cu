// A SHORTCUT fp8 block GEMM (right on benign outputs, wrong at the edge): the fp32 accumulator
// goes through an fp16 epilogue (converted to half for a half-precision staging buffer and its
// 16-byte stores, then widened to the bf16 output), a common template's output path. Outputs
// of the benign cases stay well below 65504; the case `stress` multiplies activation channels
// of 2e4 to 2e5, and its outputs pass fp16's range: inf. The harness must reject it on that
// case, naming output out's tolerance check. kernels/tests/problems_shortcuts_gtest.cpp runs the
// same arithmetic on the CPU.
#include <cuda_fp16.h>
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { A = 0, B = 1, A_SCALE = 2, B_SCALE = 3, OUT = 4, NUM_TENSORS = 5 };
enum { DIM_M = 0, DIM_N = 1, DIM_K = 2 };
constexpr size_t kBlock = 128;

__global__ void fp8_block_gemm_elements(kfleet_problem_args a) {
  const size_t M = (size_t)a.dims[DIM_M], N = (size_t)a.dims[DIM_N], K = (size_t)a.dims[DIM_K];
  const size_t KB = (K + kBlock - 1) / kBlock;
  const size_t n = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t m = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= M || n >= N) return;
  const uint8_t* A_ = static_cast<const uint8_t*>(a.tensors[A].data) + m * K;
  const uint8_t* B_ = static_cast<const uint8_t*>(a.tensors[B].data) + n * K;
  const float* as = static_cast<const float*>(a.tensors[A_SCALE].data) + m * KB;
  const float* bs = static_cast<const float*>(a.tensors[B_SCALE].data) + (n / kBlock) * KB;
  float acc = 0.0f;
  for (size_t kb = 0; kb < KB; ++kb) {
    float part = 0.0f;
    const size_t end = (kb + 1) * kBlock < K ? (kb + 1) * kBlock : K;
    for (size_t k = kb * kBlock; k < end; ++k)
      part += kfleet_fp8_e4m3_to_float(A_[k]) * kfleet_fp8_e4m3_to_float(B_[k]);
    acc += part * as[kb] * bs[kb];
  }
  const __half staged = __float2half(acc);  // the fp16 epilogue
  static_cast<uint16_t*>(a.tensors[OUT].data)[m * N + n] = kfleet_float_to_bf16_bits(__half2float(staged));
}

}  // namespace

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_PROBLEM_ABI_VERSION || args->num_tensors != NUM_TENSORS ||
      strncmp(args->problem, "fp8_block_gemm", KFLEET_PROBLEM_NAME_BYTES) != 0 ||
      args->tensors[A].dtype != KFLEET_FP8_E4M3 || args->tensors[B].dtype != KFLEET_FP8_E4M3 ||
      args->tensors[A_SCALE].dtype != KFLEET_FP32 || args->tensors[B_SCALE].dtype != KFLEET_FP32 ||
      args->tensors[OUT].dtype != KFLEET_BF16 || (args->dims[DIM_M] + 15) / 16 > 65535)
    return KFLEET_UNSUPPORTED;
  const dim3 threads(16, 16);
  const dim3 blocks((unsigned)((args->dims[DIM_N] + 15) / 16), (unsigned)((args->dims[DIM_M] + 15) / 16));
  fp8_block_gemm_elements<<<blocks, threads, 0, stream>>>(*args);
  return KFLEET_OK;
}
