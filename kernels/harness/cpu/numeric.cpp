#include "numeric.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace kfleet::harness {
namespace {

// The 127 non-negative finite e4m3 magnitudes by code (0x00..0x7E), ascending: encoding is a
// nearest-value search over this table, which is easier to trust than bit tricks.
const std::array<double, 127>& fp8_magnitudes() {
  static const std::array<double, 127> table = [] {
    std::array<double, 127> t{};
    for (int c = 0; c < 127; ++c) t[c] = fp8_e4m3_decode(static_cast<std::uint8_t>(c));
    return t;
  }();
  return table;
}

std::uint32_t float_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float bits_float(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

}  // namespace

double fp8_e4m3_decode(std::uint8_t code) {
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  const int exponent = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<double>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(mantissa / 8.0, -6);
  return sign * std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
}

std::uint8_t fp8_e4m3_encode(double x) {
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return sign | 0x7F;
  const double a = std::abs(x);
  const auto& t = fp8_magnitudes();
  if (a >= kFp8E4m3Max) return sign | 0x7E;
  const auto hi = static_cast<int>(std::lower_bound(t.begin(), t.end(), a) - t.begin());
  if (t[hi] == a || hi == 0) return sign | static_cast<std::uint8_t>(hi);
  const int lo = hi - 1;
  const double dlo = a - t[lo], dhi = t[hi] - a;
  int code = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) == 0 ? lo : hi);  // ties to even
  return sign | static_cast<std::uint8_t>(code);
}

float fp16_decode(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1F;
  const std::uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0x1F) return bits_float(sign | 0x7F800000 | (mantissa << 13));
  if (exponent == 0) {
    const float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

std::uint16_t fp16_encode(float x) {
  const std::uint32_t u = float_bits(x);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000);
  const std::uint32_t a = u & 0x7FFFFFFF;
  if (a >= 0x7F800000) return sign | (a > 0x7F800000 ? 0x7E00 : 0x7C00);
  if (a >= 0x477FF000) return sign | 0x7C00;  // >= 65520 rounds (ties-to-even) past 65504
  if (a < 0x38800000) {                       // below 2^-14: a binary16 subnormal (or zero)
    const double units = std::ldexp(static_cast<double>(bits_float(a)), 24);
    return sign | static_cast<std::uint16_t>(std::nearbyint(units));  // FE_TONEAREST: even
  }
  std::uint32_t h = (((a >> 23) - 112) << 10) | ((a >> 13) & 0x3FF);
  const std::uint32_t rest = a & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry correctly bumps the exponent
  return sign | static_cast<std::uint16_t>(h);
}

float bf16_decode(std::uint16_t bits) { return bits_float(static_cast<std::uint32_t>(bits) << 16); }

std::uint16_t bf16_encode(float x) {
  const std::uint32_t u = float_bits(x);
  if ((u & 0x7FFFFFFF) > 0x7F800000) return static_cast<std::uint16_t>((u >> 16) | 0x0040);
  const std::uint32_t rounded = u + 0x7FFF + ((u >> 16) & 1);
  return static_cast<std::uint16_t>(rounded >> 16);
}

}  // namespace kfleet::harness
