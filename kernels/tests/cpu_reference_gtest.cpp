#include "cpu_reference.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "inputs.hpp"
#include "numeric.hpp"

namespace kfleet::harness {
namespace {

TEST(AttentionReference, TwoKeysByHand) {
  // S=2, D=1: q = [1, 2], k = [0, 1], v = [10, 20], scale 1.
  // row 0: scores (0, 1) -> p = (1, e) / (1 + e); row 1: scores (0, 2).
  const AttentionShape s{1, 1, 2, 1};
  const auto o = attention_reference(s, {1, 2}, {0, 1}, {10, 20}, false, 1.0);
  const double e = std::exp(1.0), e2 = std::exp(2.0);
  EXPECT_NEAR(o[0], (10 + 20 * e) / (1 + e), 1e-12);
  EXPECT_NEAR(o[1], (10 + 20 * e2) / (1 + e2), 1e-12);
}

TEST(AttentionReference, CausalFirstRowSeesOnlyItself) {
  const AttentionShape s{1, 1, 2, 1};
  const auto o = attention_reference(s, {1, 2}, {0, 1}, {10, 20}, true, 1.0);
  EXPECT_DOUBLE_EQ(o[0], 10.0);
  const double e2 = std::exp(2.0);
  EXPECT_NEAR(o[1], (10 + 20 * e2) / (1 + e2), 1e-12);
}

TEST(AttentionReference, UniformScoresAverageValuesPerHead) {
  // q = 0 gives equal weights: each output row is the mean of its head's V rows.
  const AttentionShape s{1, 2, 3, 2};
  std::vector<double> q(12, 0.0), k(12, 1.0), v(12);
  for (int i = 0; i < 12; ++i) v[i] = i;
  const auto o = attention_reference(s, q, k, v, false, 0.5);
  EXPECT_NEAR(o[0], (0 + 2 + 4) / 3.0, 1e-12);
  EXPECT_NEAR(o[1], (1 + 3 + 5) / 3.0, 1e-12);
  EXPECT_NEAR(o[6], (6 + 8 + 10) / 3.0, 1e-12);   // second head
  EXPECT_NEAR(o[11], (7 + 9 + 11) / 3.0, 1e-12);
}

TEST(ScaledMmReference, TwoByTwoByHandInBothLayouts) {
  // A = [[1,2],[3,4]], B = [[5,6],[7,8]] (K x N): AB = [[19,22],[43,50]].
  const std::vector<double> a{1, 2, 3, 4}, b_kn{5, 6, 7, 8}, b_nk{5, 7, 6, 8};
  const auto kn = scaled_mm_reference(2, 2, 2, a, b_kn, false, 0.5, 4.0, {1, -1});
  const auto nk = scaled_mm_reference(2, 2, 2, a, b_nk, true, 0.5, 4.0, {1, -1});
  const std::vector<double> want{39, 43, 87, 99};  // 2 * AB + bias
  EXPECT_EQ(kn, want);
  EXPECT_EQ(nk, want);
}

TEST(Inputs, DeterministicPerSeedAndDistinctAcrossSeeds) {
  const auto a = random_tensor(KFLEET_FP16, 64, tensor_seed("small", 0, 0));
  const auto b = random_tensor(KFLEET_FP16, 64, tensor_seed("small", 0, 0));
  const auto c = random_tensor(KFLEET_FP16, 64, tensor_seed("small", 1, 0));
  const auto d = random_tensor(KFLEET_FP16, 64, tensor_seed("small", 0, 1));
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_NE(a.bytes, c.bytes);
  EXPECT_NE(a.bytes, d.bytes);
  for (double v : a.real) EXPECT_TRUE(v >= -1.0 && v <= 1.0);
}

TEST(Inputs, Fp8TensorsUseTheFullRangeAndDecodeToReal) {
  const auto t = random_tensor(KFLEET_FP8_E4M3, 4096, 7);
  double amax = 0;
  for (std::size_t i = 0; i < t.elements(); ++i) {
    EXPECT_DOUBLE_EQ(t.real[i], fp8_e4m3_decode(t.bytes[i]) * t.scale);
    amax = std::max(amax, std::abs(fp8_e4m3_decode(t.bytes[i])));
  }
  EXPECT_EQ(amax, 448.0);
  EXPECT_NEAR(t.scale, 1.0 / 448, 1e-5);
}

}  // namespace
}  // namespace kfleet::harness
