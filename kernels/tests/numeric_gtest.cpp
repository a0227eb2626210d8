#include "numeric.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace kfleet::harness {
namespace {

TEST(Fp8E4m3, DecodesKnownCodes) {
  EXPECT_EQ(fp8_e4m3_decode(0x00), 0.0);
  EXPECT_TRUE(std::signbit(fp8_e4m3_decode(0x80)));
  EXPECT_EQ(fp8_e4m3_decode(0x38), 1.0);           // exponent 7 = bias
  EXPECT_EQ(fp8_e4m3_decode(0xB8), -1.0);
  EXPECT_EQ(fp8_e4m3_decode(0x3C), 1.5);
  EXPECT_EQ(fp8_e4m3_decode(0x7E), 448.0);         // largest finite
  EXPECT_EQ(fp8_e4m3_decode(0x08), 0.015625);      // smallest normal 2^-6
  EXPECT_EQ(fp8_e4m3_decode(0x01), 0.001953125);   // smallest subnormal 2^-9
  EXPECT_EQ(fp8_e4m3_decode(0x07), 7 * 0.001953125);
  EXPECT_EQ(fp8_e4m3_decode(0x78), 256.0);         // exponent 15 is finite except mantissa 7
  EXPECT_TRUE(std::isnan(fp8_e4m3_decode(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_decode(0xFF)));
}

TEST(Fp8E4m3, EveryFiniteCodeRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    EXPECT_EQ(fp8_e4m3_encode(fp8_e4m3_decode(static_cast<std::uint8_t>(c))), c) << c;
  }
}

TEST(Fp8E4m3, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(fp8_e4m3_encode(1.0625), 0x38);  // halfway 1.0 (0x38, even) and 1.125 (0x39)
  EXPECT_EQ(fp8_e4m3_encode(1.1875), 0x3A);  // halfway 1.125 (0x39) and 1.25 (0x3A, even)
  EXPECT_EQ(fp8_e4m3_encode(1.07), 0x39);
  EXPECT_EQ(fp8_e4m3_encode(0.0009765625), 0x00);  // half the smallest subnormal: ties to 0
  EXPECT_EQ(fp8_e4m3_encode(0.0015), 0x01);
  EXPECT_EQ(fp8_e4m3_encode(500.0), 0x7E);
  EXPECT_EQ(fp8_e4m3_encode(-1e9), 0xFE);
  EXPECT_EQ(fp8_e4m3_encode(std::numeric_limits<double>::infinity()), 0x7E);
  EXPECT_EQ(fp8_e4m3_encode(std::nan("")) & 0x7F, 0x7F);
}

TEST(Fp16, EncodesAndDecodesKnownValues) {
  EXPECT_EQ(fp16_encode(1.0f), 0x3C00);
  EXPECT_EQ(fp16_encode(-2.0f), 0xC000);
  EXPECT_EQ(fp16_encode(65504.0f), 0x7BFF);
  EXPECT_EQ(fp16_encode(65519.0f), 0x7BFF);
  EXPECT_EQ(fp16_encode(65520.0f), 0x7C00);  // tie with the next step rounds to even = Inf
  EXPECT_EQ(fp16_encode(5.9604645e-8f), 0x0001);  // smallest subnormal 2^-24
  EXPECT_EQ(fp16_encode(6.1035156e-5f), 0x0400);  // smallest normal
  EXPECT_EQ(fp16_encode(1.0f + 1.0f / 2048), 0x3C00);      // tie to even (down)
  EXPECT_EQ(fp16_encode(1.0f + 3.0f / 2048), 0x3C02);      // tie to even (up)
  EXPECT_EQ(fp16_encode(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(fp16_encode(std::nanf("")) & 0x7C00, 0x7C00);
  EXPECT_NE(fp16_encode(std::nanf("")) & 0x3FF, 0);
  EXPECT_EQ(fp16_decode(0x3555), 0.333251953125f);
  EXPECT_EQ(fp16_decode(0x8001), -5.9604645e-8f);
  EXPECT_TRUE(std::isnan(fp16_decode(0xFFFF)));  // the harness's poison pattern is a NaN
  EXPECT_TRUE(std::isinf(fp16_decode(0xFC00)));
}

TEST(Fp16, AllFiniteBitPatternsRoundTrip) {
  for (int b = 0; b < 0x10000; ++b) {
    if ((b & 0x7C00) == 0x7C00) continue;
    ASSERT_EQ(fp16_encode(fp16_decode(static_cast<std::uint16_t>(b))), b) << b;
  }
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(bf16_encode(1.0f), 0x3F80);
  EXPECT_EQ(bf16_decode(0x3F80), 1.0f);
  EXPECT_EQ(bf16_encode(1.0f + 1.0f / 256), 0x3F80);  // tie, even stays
  EXPECT_EQ(bf16_encode(1.0f + 3.0f / 256), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(bf16_encode(-3.0f), 0xC040);
  EXPECT_TRUE(std::isnan(bf16_decode(bf16_encode(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bf16_decode(0xFFFF)));
}

}  // namespace
}  // namespace kfleet::harness
