#include "metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kfleet::harness {

Metrics compute_metrics(const float* actual, const double* reference, std::size_t n) {
  Metrics m;
  m.elements = n;
  double ref_max = 0;
  for (std::size_t i = 0; i < n; ++i) ref_max = std::max(ref_max, std::abs(reference[i]));
  const double rel_floor = kRelFloor * ref_max;
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = actual[i], r = reference[i];
    ref2 += r * r;
    if (std::isnan(x)) { ++m.nan_count; continue; }
    if (std::isinf(x)) { ++m.inf_count; continue; }
    const double e = std::abs(x - r);
    err2 += e * e;
    m.max_abs = std::max(m.max_abs, e);
    if (std::abs(r) >= rel_floor && r != 0) m.max_rel = std::max(m.max_rel, e / std::abs(r));
  }
  m.rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  return m;
}

std::size_t allclose_violations(const float* actual, const double* reference, std::size_t n,
                                double atol, double rtol, const double* terms, double dot_rtol) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = actual[i], r = reference[i];
    const double bound = atol + rtol * std::abs(r) + (terms ? dot_rtol * terms[i] : 0.0);
    if (!std::isfinite(x) || !(std::abs(x - r) <= bound)) ++bad;
  }
  return bad;
}

std::string check_tolerance(const Metrics& m, std::size_t violations, const Tolerance& tol) {
  char buf[200];
  if (m.nan_count || m.inf_count) {
    std::snprintf(buf, sizeof buf, "output has %zu NaN and %zu Inf of %zu elements", m.nan_count,
                  m.inf_count, m.elements);
    return buf;
  }
  if (tol.atol >= 0 && violations) {
    if (tol.dot_rtol >= 0)
      std::snprintf(buf, sizeof buf,
                    "%zu of %zu elements outside atol %g + rtol %g * |ref| + dot_rtol %g * sum |terms|",
                    violations, m.elements, tol.atol, std::max(tol.rtol, 0.0), tol.dot_rtol);
    else
      std::snprintf(buf, sizeof buf, "%zu of %zu elements outside atol %g + rtol %g * |ref|",
                    violations, m.elements, tol.atol, std::max(tol.rtol, 0.0));
    return buf;
  }
  auto over = [&](const char* name, double v, double bound) {
    std::snprintf(buf, sizeof buf, "%s %.6g > %g", name, v, bound);
    return std::string(buf);
  };
  if (tol.max_abs >= 0 && !(m.max_abs <= tol.max_abs)) return over("max_abs", m.max_abs, tol.max_abs);
  if (tol.max_rel >= 0 && !(m.max_rel <= tol.max_rel)) return over("max_rel", m.max_rel, tol.max_rel);
  if (tol.rel_l2 >= 0 && !(m.rel_l2 <= tol.rel_l2)) return over("rel_l2", m.rel_l2, tol.rel_l2);
  return "";
}

}  // namespace kfleet::harness
