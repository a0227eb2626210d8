// A SHORTCUT fp8 GEMM (right on benign data, wrong at the edge): e4m3 decoded by moving its
// exponent and mantissa bits into an fp32 with the bias corrected, the branch for subnormal codes
// (exponent bits 0) left out: they decode as 0. On the family's uniform [-1, 1) inputs, scaled
// by amax / 448, a code is subnormal only below 1/28672 of the largest value, and those few add
// nothing measurable; in scaled_mm@4's case `stress` the ordinary tokens of activations whose
// massive ones pass fp16 are mostly subnormal codes, and their outputs come out 0. The harness
// must reject it on that case, naming output d's check. kernels/tests/problems_shortcuts_gtest.cpp
// runs the same arithmetic on the CPU. b as [N, K], no bias.
#include "kfleet_harness/kernel.hpp"

namespace {

__device__ float decode_normal_only(uint8_t c) {
  if ((c & 0x78) == 0) return 0.0f;  // the skipped subnormal branch
  const uint32_t bits = ((uint32_t)(c & 0x80) << 24) | ((((uint32_t)(c >> 3) & 0xF) + 120) << 23) |
                        ((uint32_t)(c & 0x7) << 20);
  return __uint_as_float(bits);
}

__global__ void scaled_mm_elements(kfleet_scaled_mm_args a) {
  const size_t col = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t row = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= (size_t)a.m || col >= (size_t)a.n) return;
  const size_t N = a.n, K = a.k;
  const uint8_t* A = static_cast<const uint8_t*>(a.a);
  const uint8_t* B = static_cast<const uint8_t*>(a.b);
  float acc = 0.0f;
  for (size_t p = 0; p < K; ++p) acc += decode_normal_only(A[row * K + p]) * decode_normal_only(B[col * K + p]);
  static_cast<uint16_t*>(a.d)[row * N + col] = kfleet_float_to_half_bits(acc * a.a_scale * a.b_scale);
}

}  // namespace

extern "C" int kfleet_scaled_mm_launch(const kfleet_scaled_mm_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_ABI_VERSION || args->a_dtype != KFLEET_FP8_E4M3 ||
      args->b_dtype != KFLEET_FP8_E4M3 || args->out_dtype != KFLEET_FP16 ||
      args->b_layout != KFLEET_B_NK || args->bias)
    return KFLEET_UNSUPPORTED;
  const dim3 threads(16, 16);
  const dim3 blocks((unsigned)((args->n + 15) / 16), (unsigned)((args->m + 15) / 16));
  scaled_mm_elements<<<blocks, threads, 0, stream>>>(*args);
  return KFLEET_OK;
}
