#pragma once
// What a job's kernel source includes (ABI.md): the ABI structs, the CUDA/HIP shim, the launch
// declarations, and bit-exact conversions that behave the same under nvcc and clang/hipcc.
#include <stdint.h>

#include "kfleet_harness/abi.h"
#include "kfleet_harness/gpu_runtime.hpp"
#include "kfleet_harness/problem_abi.h"

extern "C" int kfleet_attention_launch(const kfleet_attention_args* args, gpuStream_t stream);
extern "C" int kfleet_scaled_mm_launch(const kfleet_scaled_mm_args* args, gpuStream_t stream);
// A problem of the library (kernels/problems/<name>, PROBLEM-ABI.md).
extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream);

__host__ __device__ inline float kfleet_bits_to_float(uint32_t u) {
  union { uint32_t u; float f; } v;
  v.u = u;
  return v.f;
}
__host__ __device__ inline uint32_t kfleet_float_to_bits(float f) {
  union { uint32_t u; float f; } v;
  v.f = f;
  return v.u;
}

// fp8 e4m3fn (0x7F/0xFF are NaN, no infinities).
__host__ __device__ inline float kfleet_fp8_e4m3_to_float(uint8_t c) {
  const uint32_t sign = (uint32_t)(c & 0x80) << 24, e = (c >> 3) & 0xF, m = c & 0x7;
  if (e == 0xF && m == 0x7) return kfleet_bits_to_float(0x7FC00000u);
  if (e == 0) return kfleet_bits_to_float(sign) + (sign ? -1.0f : 1.0f) * (float)m * 0.001953125f;
  return kfleet_bits_to_float(sign | ((e + 120) << 23) | (m << 20));
}

__host__ __device__ inline float kfleet_half_bits_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  if (e == 0x1F) return kfleet_bits_to_float(sign | 0x7F800000u | (m << 13));
  if (e == 0) return (sign ? -1.0f : 1.0f) * (float)m * 5.9604644775390625e-8f;
  return kfleet_bits_to_float(sign | ((e + 112) << 23) | (m << 13));
}

// Round to nearest even; overflow gives Inf, NaN stays NaN.
__host__ __device__ inline uint16_t kfleet_float_to_half_bits(float f) {
  const uint32_t u = kfleet_float_to_bits(f), a = u & 0x7FFFFFFFu;
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  if (a >= 0x7F800000u) return sign | (a > 0x7F800000u ? 0x7E00 : 0x7C00);
  if (a >= 0x477FF000u) return sign | 0x7C00;
  if (a < 0x38800000u) {  // subnormal: units of 2^-24, round half to even
    const float units = kfleet_bits_to_float(a) * 16777216.0f;  // exact: a power-of-two scale
    uint32_t q = (uint32_t)units;
    const float rest = units - (float)q;
    if (rest > 0.5f || (rest == 0.5f && (q & 1))) ++q;
    return sign | (uint16_t)q;
  }
  uint32_t h = (((a >> 23) - 112) << 10) | ((a >> 13) & 0x3FF);
  const uint32_t rest = a & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return sign | (uint16_t)h;
}

__host__ __device__ inline float kfleet_bf16_bits_to_float(uint16_t b) {
  return kfleet_bits_to_float((uint32_t)b << 16);
}
__host__ __device__ inline uint16_t kfleet_float_to_bf16_bits(float f) {
  const uint32_t u = kfleet_float_to_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}
