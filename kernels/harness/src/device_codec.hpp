#pragma once
// Device-side number encodings the harness's own kernels share (fresh inputs, problem inputs).
#include <cstdint>

#include "kfleet_harness/kernel.hpp"

namespace kfleet::harness {

// OCP e4m3fn, round to nearest even, saturating to +-448 (ABI.md "Number formats").
__device__ inline std::uint8_t fp8_e4m3_encode_dev(float x) {
  const std::uint8_t sign = x < 0 ? 0x80 : 0;
  float a = fabsf(x);
  if (!(a < 448.0f)) return sign | 0x7E;
  if (a < 0.015625f) {  // below 2^-6: subnormal steps of 2^-9 (8 rounds up into the normals)
    const int q = (int)rintf(a * 512.0f);
    return sign | (std::uint8_t)q;
  }
  const std::uint32_t bits = kfleet_float_to_bits(a);
  int e = (int)((bits >> 23) & 0xFF) - 127;      // a = 1.m * 2^e (a is a normal float here)
  const float mant = kfleet_bits_to_float((bits & 0x7FFFFFu) | 0x3F800000u);
  int m = (int)rintf((mant - 1.0f) * 8.0f);
  if (m == 8) { m = 0; ++e; }
  int code = ((e + 7) << 3) | m;
  if (code > 0x7E) code = 0x7E;
  return sign | (std::uint8_t)code;
}

}  // namespace kfleet::harness
