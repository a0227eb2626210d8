// Each output's check (tolerance: the harness's metrics; exact; topk: index sets equal up to
// ties) and the do-nothing outputs a check must reject (zeros, mean, a copy of an input, iota).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "metrics.hpp"
#include "problem_cpu.hpp"

namespace kfleet::problems {
namespace {

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[200];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

// dot_rtol's sums of |terms|: the problem's reference of the inputs' absolute values (the
// scaled_mm family, a sum of products; the harness computes the same, scaled_mm_problem.cu).
std::vector<double> terms_of(const CaseData& data, const std::string& output) {
  CaseData abs_data = data;
  for (auto& [name, t] : abs_data.inputs)
    for (double& x : t.real) x = std::abs(x);
  return find_reference(data.def->name)(abs_data).at(output).real;
}

std::string check_tolerance(const CaseData& data, const std::string& output, const ProblemCheck& k,
                            const Tensor& ref, const Tensor& act) {
  std::vector<float> a(act.real.begin(), act.real.end());
  const auto m = harness::compute_metrics(a.data(), ref.real.data(), a.size());
  harness::Tolerance tol;
  tol.atol = k.atol;
  tol.rtol = k.rtol;
  tol.max_abs = k.max_abs;
  tol.rel_l2 = k.rel_l2;
  tol.dot_rtol = k.atol >= 0 && data.def ? k.dot_rtol : -1;
  const std::vector<double> terms = tol.dot_rtol >= 0 ? terms_of(data, output) : std::vector<double>{};
  const std::size_t bad = k.atol >= 0 ? harness::allclose_violations(a.data(), ref.real.data(), a.size(), k.atol,
                                                                     std::max(k.rtol, 0.0),
                                                                     terms.size() == a.size() ? terms.data() : nullptr,
                                                                     tol.dot_rtol)
                                      : 0;
  return harness::check_tolerance(m, bad, tol);
}

std::string check_exact(const Tensor& ref, const Tensor& act) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < ref.real.size(); ++i) {
    if (!(act.real[i] == ref.real[i])) {
      if (!bad) first = i;
      ++bad;
    }
  }
  if (!bad) return "";
  return fmt("%.0f of %.0f elements differ (exact check); first at %.0f: ", static_cast<double>(bad),
             static_cast<double>(ref.real.size()), static_cast<double>(first)) +
         fmt("%.9g, want %.9g", act.real[first], ref.real[first]);
}

// Row by row: indices in range and distinct, and the values at them, in order, equal the
// reference's top-k values (so any tie-break passes, and the order must be the sorted one).
std::string check_topk(const CaseData& data, const ProblemCheck& k, const Tensor& act) {
  const Tensor& x = data.inputs.at(k.of);
  const auto len = static_cast<std::size_t>(x.shape.back());
  const auto kk = static_cast<std::size_t>(act.shape.back());
  const std::size_t rows = kk ? act.elements() / kk : 0;
  std::vector<double> row(len), want(len);
  for (std::size_t r = 0; r < rows; ++r) {
    std::copy_n(x.real.begin() + static_cast<std::ptrdiff_t>(r * len), len, row.begin());
    want = row;
    if (k.largest) std::sort(want.begin(), want.end(), std::greater<>());
    else std::sort(want.begin(), want.end());
    std::set<std::int64_t> seen;
    for (std::size_t j = 0; j < kk; ++j) {
      const double idx = act.real[r * kk + j];
      const auto rr = static_cast<double>(r), jj = static_cast<double>(j);
      if (!(idx >= 0 && idx < static_cast<double>(len)) || idx != std::floor(idx))
        return fmt("row %.0f, entry %.0f: index %.17g is outside [0, %.0f)", rr, jj, idx, static_cast<double>(len));
      if (!seen.insert(static_cast<std::int64_t>(idx)).second)
        return fmt("row %.0f, entry %.0f: index %.0f appears twice", rr, jj, idx);
      const double v = row[static_cast<std::size_t>(idx)];
      if (v != want[j])
        return fmt("row %.0f, entry %.0f: index %.0f holds %.9g; ", rr, jj, idx, v) +
               fmt("the top-k value there is %.9g", want[j]);
    }
  }
  return "";
}

}  // namespace

std::string check_output(const CaseData& data, const ProblemTensor& out, const Tensor& reference,
                         const Tensor& actual) {
  if (actual.real.size() != reference.real.size())
    return fmt("has %.0f elements, want %.0f", static_cast<double>(actual.real.size()), static_cast<double>(reference.real.size()));
  // The case's own bounds where it sets them (ProblemCase::check).
  const ProblemCase* c = data.def ? data.def->find_case(data.case_name) : nullptr;
  const ProblemCheck check = c ? data.def->check_of(out, *c) : out.check;
  const std::string& kind = check.kind;
  std::string why = kind == "tolerance" ? check_tolerance(data, out.name, check, reference, actual)
                    : kind == "exact"   ? check_exact(reference, actual)
                                        : check_topk(data, check, actual);
  return why.empty() ? "" : out.name + ": " + why;
}

Tensor lazy_output(const CaseData& data, const ProblemTensor& out, const ProblemLazy& lazy,
                   const Tensor& reference) {
  Tensor t = reference;
  const std::size_t n = t.real.size();
  if (lazy.kind == "zeros") {
    std::fill(t.real.begin(), t.real.end(), 0.0);
  } else if (lazy.kind == "mean") {
    const double mean = n ? std::accumulate(reference.real.begin(), reference.real.end(), 0.0) / static_cast<double>(n) : 0.0;
    std::fill(t.real.begin(), t.real.end(), mean);
  } else if (lazy.kind == "copy") {
    t.real = data.inputs.at(lazy.input).real;
  } else if (lazy.kind == "iota") {
    const auto row = static_cast<std::size_t>(t.shape.empty() ? 1 : t.shape.back());
    for (std::size_t i = 0; i < n; ++i) t.real[i] = static_cast<double>(i % row);
  }
  t.dtype = out.dtype;
  return rounded(t);
}

}  // namespace kfleet::problems
