// A SHORTCUT fp8 GEMM (right on benign data, wrong at the edge): each operand dequantised to
// fp16 (code times its tensor's scale, rounded to half, as a kernel does that feeds fp16 tensor
// cores instead of fp8 ones), then fp32 accumulation. On the family's uniform [-1, 1) inputs the
// dequantised values lie in [-1, 1] and fp16 holds them to 2^-11; in scaled_mm@4's case `stress`
// the massive tokens' activations pass 65504, become inf, and their outputs inf or NaN. The
// harness must reject it on that case, naming output d's check.
// kernels/tests/problems_shortcuts_gtest.cpp runs the same arithmetic on the CPU. b as [N, K],
// no bias.
#include <cuda_fp16.h>

#include "kfleet_harness/kernel.hpp"

namespace {

__global__ void scaled_mm_elements(kfleet_scaled_mm_args a) {
  const size_t col = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t row = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= (size_t)a.m || col >= (size_t)a.n) return;
  const size_t N = a.n, K = a.k;
  const uint8_t* A = static_cast<const uint8_t*>(a.a);
  const uint8_t* B = static_cast<const uint8_t*>(a.b);
  float acc = 0.0f;
  for (size_t p = 0; p < K; ++p) {
    const __half x = __float2half(kfleet_fp8_e4m3_to_float(A[row * K + p]) * a.a_scale);
    const __half y = __float2half(kfleet_fp8_e4m3_to_float(B[col * K + p]) * a.b_scale);
    acc += __half2float(x) * __half2float(y);
  }
  static_cast<uint16_t*>(a.d)[row * N + col] = kfleet_float_to_half_bits(acc);
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
