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

// The relative floor is kRelFloor times the largest |reference|, and a reference exactly on it
// counts: 0.1 = 1e-3 * 100 is measured (its error 0.05 / 0.1), 0.09 is not.
TEST(Metrics, RelativeFloorIsAFractionOfTheLargestReference) {
  const float on[] = {0.15f, 100.0f};
  const double r_on[] = {0.1, 100.0};
  EXPECT_NEAR(compute_metrics(on, r_on, 2).max_rel, 0.5, 1e-6);
  const float under[] = {0.14f, 100.0f};
  const double r_under[] = {0.09, 100.0};
  EXPECT_DOUBLE_EQ(compute_metrics(under, r_under, 2).max_rel, 0.0);
}

// An all-zero reference has no norm: rel_l2 is then the error's own norm, finite, not err / 0.
TEST(Metrics, RelL2OfAnAllZeroReferenceIsTheErrorsNorm) {
  const float x[] = {3.0f, 4.0f};
  const double r[] = {0.0, 0.0};
  const Metrics m = compute_metrics(x, r, 2);
  EXPECT_DOUBLE_EQ(m.rel_l2, 5.0);
  EXPECT_DOUBLE_EQ(m.max_rel, 0.0);  // no reference is past the floor of a zero maximum
}

// An element exactly on allclose's band passes (<=, as numpy's allclose); one ulp past fails.
TEST(Metrics, AllcloseBandIsInclusive) {
  const float x[] = {1.5f};
  const double r[] = {1.0};
  EXPECT_EQ(allclose_violations(x, r, 1, 0.25, 0.25), 0u);  // |0.5| <= 0.25 + 0.25 * 1
  EXPECT_EQ(allclose_violations(x, r, 1, 0.25, 0.2499999), 1u);
}

// NaN alone, or Inf alone, fails a tolerance that bounds only metrics NaN and Inf are left out
// of: a kernel that writes NaN into every element must not pass a max_abs bound.
TEST(Metrics, NanAloneOrInfAloneFailsEveryBound) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const double r[] = {1.0, 1.0};
  Tolerance t;
  t.max_abs = 1e30;
  t.max_rel = 1e30;
  t.rel_l2 = 1e30;
  const float nans[] = {nan, nan};
  EXPECT_EQ(check_tolerance(compute_metrics(nans, r, 2), 0, t), "output has 2 NaN and 0 Inf of 2 elements");
  const float infs[] = {1.0f, -inf};
  EXPECT_EQ(check_tolerance(compute_metrics(infs, r, 2), 0, t), "output has 0 NaN and 1 Inf of 2 elements");
}

// atol 0 is a bound (rtol alone), not "unchecked": its violations fail the case, and the message
// names each term, rtol as given and dot_rtol 0 included.
TEST(Metrics, ZeroAtolAndZeroDotRtolAreBounds) {
  const float x[] = {1.02f};
  const double r[] = {1.0};
  Tolerance t;
  t.atol = 0;
  t.rtol = 0.01;
  const Metrics m = compute_metrics(x, r, 1);
  EXPECT_EQ(allclose_violations(x, r, 1, t.atol, t.rtol), 1u);
  EXPECT_EQ(check_tolerance(m, 1, t), "1 of 1 elements outside atol 0 + rtol 0.01 * |ref|");
  t.dot_rtol = 0;
  EXPECT_EQ(check_tolerance(m, 1, t), "1 of 1 elements outside atol 0 + rtol 0.01 * |ref| + dot_rtol 0 * sum |terms|");
  t.rtol = -1;  // atol alone: the message reads rtol 0, not a negative "unchecked" marker
  t.dot_rtol = -1;
  EXPECT_EQ(check_tolerance(m, 1, t), "1 of 1 elements outside atol 0 + rtol 0 * |ref|");
}

// Each bound holds up to and including its value, and 0 is a bound (an exact match), not
// "unchecked" (which is negative).
TEST(Metrics, BoundsAreInclusiveAndZeroIsABound) {
  const float x[] = {1.5f};
  const double r[] = {1.0};
  const Metrics m = compute_metrics(x, r, 1);  // 0.5 by every metric
  const char* names[] = {"max_abs", "max_rel", "rel_l2"};
  for (int which = 0; which < 3; ++which) {
    auto bound = [&](double v) {
      Tolerance t;
      (which == 0 ? t.max_abs : which == 1 ? t.max_rel : t.rel_l2) = v;
      return t;
    };
    EXPECT_EQ(check_tolerance(m, 0, bound(0.5)), "") << names[which];
    EXPECT_EQ(check_tolerance(m, 0, bound(0)), std::string(names[which]) + " 0.5 > 0");
    EXPECT_EQ(check_tolerance(compute_metrics(x, r, 0), 0, bound(0)), "") << names[which] << ": nothing to differ";
  }
}

}  // namespace
}  // namespace kfleet::harness
