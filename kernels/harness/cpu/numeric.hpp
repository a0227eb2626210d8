#pragma once
// Host encodings of the number formats in the kernel ABI (ABI.md, "Number formats"). Plain C++17
// with no GPU dependency: the CPU references, the input generator and CI tests use these, so the
// harness never depends on a runtime's own conversion intrinsics being right.
#include <cstdint>

namespace kfleet::harness {

// OCP fp8 e4m3fn. decode: NaN for 0x7F/0xFF. encode: round to nearest even, saturating to
// +-448 (Inf included); NaN encodes as 0x7F with the input's sign bit.
double fp8_e4m3_decode(std::uint8_t code);
std::uint8_t fp8_e4m3_encode(double x);
constexpr double kFp8E4m3Max = 448.0;

// IEEE binary16, round to nearest even (overflow to Inf, NaN stays NaN).
float fp16_decode(std::uint16_t bits);
std::uint16_t fp16_encode(float x);

// bfloat16 (upper half of binary32), round to nearest even; NaN stays a quiet NaN.
float bf16_decode(std::uint16_t bits);
std::uint16_t bf16_encode(float x);

}  // namespace kfleet::harness
