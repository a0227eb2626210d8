#pragma once
// Correctness metrics of an output against a reference (PROTOCOL.md, "Metric definitions").
// NaN or Inf in the output always fails, whatever the tolerance.
#include <cstddef>
#include <string>
#include <vector>

namespace kfleet::harness {

struct Metrics {
  std::size_t elements = 0;
  std::size_t nan_count = 0, inf_count = 0;
  double max_abs = 0;  // max |x - r| over finite outputs
  double max_rel = 0;  // max |x - r| / |r| over |r| >= kRelFloor * max|r|
  double rel_l2 = 0;   // ||x - r|| / ||r||  (||x - r|| when r is all zero)
};
constexpr double kRelFloor = 1e-3;

// Bounds a case must satisfy; a negative value means "not checked".
struct Tolerance {
  double atol = -1, rtol = -1;  // allclose, both set together
  // allclose's third term: dot_rtol * sum_k |terms| of each output (a sum of products' own
  // magnitude, the bound its rounding is stated against); with atol only, and only where the
  // problem gives those sums (Problem::cpu_reference_terms)
  double dot_rtol = -1;
  double max_abs = -1, max_rel = -1, rel_l2 = -1;
  bool any() const { return atol >= 0 || max_abs >= 0 || max_rel >= 0 || rel_l2 >= 0; }
};

// Both spans have n elements.
Metrics compute_metrics(const float* actual, const double* reference, std::size_t n);

// Elements failing |x - r| <= atol + rtol * |r| (+ dot_rtol * terms[i] where terms is given:
// each output's sum of |terms|) (NaN/Inf always fail).
std::size_t allclose_violations(const float* actual, const double* reference, std::size_t n,
                                double atol, double rtol, const double* terms = nullptr,
                                double dot_rtol = 0);

// "" when every bound in tol holds, else the first failure in words ("max_abs 0.21 > 0.06").
std::string check_tolerance(const Metrics& m, std::size_t allclose_violations,
                            const Tolerance& tol);

}  // namespace kfleet::harness
