// A plain, correct fp8 scaled GEMM for the kfleet ABI (ABI.md): one thread per output element,
// fp32 accumulation, one rounding to the output type. CUDA and HIP.
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
    const uint8_t b = a.b_layout == KFLEET_B_NK ? B[col * K + p] : B[p * N + col];
    acc += kfleet_fp8_e4m3_to_float(A[row * K + p]) * kfleet_fp8_e4m3_to_float(b);
  }
  float out = acc * a.a_scale * a.b_scale;
  const bool bf16 = a.out_dtype == KFLEET_BF16;
  if (a.bias) {
    const uint16_t bias = static_cast<const uint16_t*>(a.bias)[col];
    out += bf16 ? kfleet_bf16_bits_to_float(bias) : kfleet_half_bits_to_float(bias);
  }
  static_cast<uint16_t*>(a.d)[row * N + col] =
      bf16 ? kfleet_float_to_bf16_bits(out) : kfleet_float_to_half_bits(out);
}

}  // namespace

extern "C" int kfleet_scaled_mm_launch(const kfleet_scaled_mm_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_ABI_VERSION || args->a_dtype != KFLEET_FP8_E4M3 ||
      args->b_dtype != KFLEET_FP8_E4M3 ||
      (args->out_dtype != KFLEET_FP16 && args->out_dtype != KFLEET_BF16))
    return KFLEET_UNSUPPORTED;
  const dim3 threads(16, 16);
  const dim3 blocks((unsigned)((args->n + 15) / 16), (unsigned)((args->m + 15) / 16));
  scaled_mm_elements<<<blocks, threads, 0, stream>>>(*args);
  return KFLEET_OK;
}
