#include "metrics.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace kfleet::harness {
namespace {

TEST(Metrics, KnownArrays) {
  const float x[] = {1.0f, 2.5f, -3.0f, 0.0f};
  const double r[] = {1.0, 2.0, -2.0, 0.0};
  const Metrics m = compute_metrics(x, r, 4);
  EXPECT_EQ(m.elements, 4u);
  EXPECT_DOUBLE_EQ(m.max_abs, 1.0);
  EXPECT_DOUBLE_EQ(m.max_rel, 0.5);                           // 1 / |-2|; r = 0 excluded
  EXPECT_NEAR(m.rel_l2, std::sqrt(1.25 / 9.0), 1e-12);        // sqrt(0.25+1) / sqrt(1+4+4)
  EXPECT_EQ(m.nan_count, 0u);
  EXPECT_EQ(check_tolerance(m, 0, Tolerance{}), "");
}

TEST(Metrics, RelativeErrorIgnoresNearZeroReferences) {
  const float x[] = {1e-6f, 100.0f};
  const double r[] = {1e-9, 100.0};  // 1e-9 < 1e-3 * 100: its huge relative error is ignored
  EXPECT_DOUBLE_EQ(compute_metrics(x, r, 2).max_rel, 0.0);
}

TEST(Metrics, NanAndInfAlwaysFail) {
  const float x[] = {1.0f, std::numeric_limits<float>::quiet_NaN(),
                     std::numeric_limits<float>::infinity()};
  const double r[] = {1.0, 1.0, 1.0};
  const Metrics m = compute_metrics(x, r, 3);
  EXPECT_EQ(m.nan_count, 1u);
  EXPECT_EQ(m.inf_count, 1u);
  Tolerance loose;
  loose.max_abs = 1e30;
  EXPECT_NE(check_tolerance(m, 0, loose), "");
  EXPECT_EQ(allclose_violations(x, r, 3, 1e30, 1e30), 2u);
}

TEST(Metrics, AllcloseCountsElementsOutsideBand) {
  const float x[] = {1.0f, 1.03f, 10.05f, -0.2f};
  const double r[] = {1.0, 1.0, 10.0, 0.0};
  // band = 0.01 + 0.01 * |r|: 0.02 for r=1, 0.11 for r=10, 0.01 for r=0
  EXPECT_EQ(allclose_violations(x, r, 4, 0.01, 0.01), 2u);  // 1.03 and -0.2 fall outside
  Tolerance t;
  t.atol = 0.01;
  t.rtol = 0.01;
  EXPECT_NE(check_tolerance(compute_metrics(x, r, 4), 2, t).find("2 of 4"), std::string::npos);
}

// dot_rtol: each element's band also takes dot_rtol times its sum of |terms| (an output near 0
// in a row of large terms carries their rounding); without the sums the band is allclose's.
TEST(Metrics, AllcloseWidensByEachOutputsSumOfTerms) {
  const float x[] = {0.5f, 1.0f, 30.0f};
  const double r[] = {0.0, 1.0, 40.0};
  const double terms[] = {1000.0, 1.0, 1000.0};  // a near-zero output of large terms; a small one
  EXPECT_EQ(allclose_violations(x, r, 3, 0.01, 0.01), 2u);
  EXPECT_EQ(allclose_violations(x, r, 3, 0.01, 0.01, terms, 0.001), 1u);  // 0.5 <= 0.01 + 1; 10 > 1.41
  EXPECT_EQ(allclose_violations(x, r, 3, 0.01, 0.01, nullptr, 0.001), 2u);
  Tolerance t;
  t.atol = 0.01;
  t.rtol = 0.01;
  t.dot_rtol = 0.001;
  EXPECT_NE(check_tolerance(compute_metrics(x, r, 3), 1, t).find("+ dot_rtol 0.001 * sum |terms|"),
            std::string::npos);
}

TEST(Metrics, BoundsNameTheFailedMetric) {
  const float x[] = {1.3f};
  const double r[] = {1.0};
  const Metrics m = compute_metrics(x, r, 1);
  Tolerance t;
  t.max_abs = 0.06;
  EXPECT_EQ(check_tolerance(m, 0, t).rfind("max_abs", 0), 0u);
  t = Tolerance{};
  t.rel_l2 = 0.01;
  EXPECT_EQ(check_tolerance(m, 0, t).rfind("rel_l2", 0), 0u);
  t.rel_l2 = 0.5;
  EXPECT_EQ(check_tolerance(m, 0, t), "");
}

}  // namespace
}  // namespace kfleet::harness
