#include "problem_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <set>

#include "numeric.hpp"

namespace kfleet::harness {
namespace {

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[240];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

}  // namespace

double round_to_dtype(kfleet_dtype t, double x) {
  switch (t) {
    case KFLEET_BF16: return bf16_decode(bf16_encode(static_cast<float>(x)));
    case KFLEET_FP16: return fp16_decode(fp16_encode(static_cast<float>(x)));
    case KFLEET_FP32: return static_cast<float>(x);
    case KFLEET_INT32: case KFLEET_INT64: return std::nearbyint(x);
    default: return x;
  }
}

std::vector<double> decode_output(kfleet_dtype t, const std::vector<std::uint8_t>& raw, std::size_t n,
                                  const std::vector<double>* ref, std::size_t* unwritten) {
  std::vector<double> out(n);
  std::size_t poison = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double x = 0;
    bool poisoned = false;
    if (t == KFLEET_FP32) {
      std::uint32_t b;
      std::memcpy(&b, &raw[4 * i], 4);
      poisoned = b == 0xFFFFFFFFu;
      float f;
      std::memcpy(&f, &b, 4);
      x = f;
    } else if (t == KFLEET_BF16 || t == KFLEET_FP16) {
      std::uint16_t b;
      std::memcpy(&b, &raw[2 * i], 2);
      poisoned = b == 0xFFFF;
      x = t == KFLEET_BF16 ? bf16_decode(b) : fp16_decode(b);
    } else if (t == KFLEET_INT32) {
      std::int32_t b;
      std::memcpy(&b, &raw[4 * i], 4);
      poisoned = b == -1 && ref && (*ref)[i] != -1;
      x = b;
    } else if (t == KFLEET_INT64) {
      std::int64_t b;
      std::memcpy(&b, &raw[8 * i], 8);
      poisoned = b == -1 && ref && (*ref)[i] != -1;
      x = static_cast<double>(b);
    }
    poison += poisoned;
    out[i] = x;
  }
  if (unwritten) *unwritten = poison;
  return out;
}

OutputCheck problem_output_check(const ProblemSpec& spec, const SpecCase& c, std::size_t k,
                                 const std::vector<double>& act, const std::vector<double>& ref,
                                 const SpecInputs& inputs) {
  const SpecOutput& out = spec.outputs[k];
  const std::size_t slot = static_cast<std::size_t>(out.slot);
  const kfleet_dtype dt = spec.tensors[slot].dtype;
  const SpecCase& case_ = c;
  const SpecCheck& check = out.check;
  const std::size_t n = act.size();
  OutputCheck r;
  if (act.size() != ref.size()) {
    r.reason = "output " + out.name + ": " + std::to_string(act.size()) + " values for " + std::to_string(ref.size());
    return r;
  }
  std::vector<float> a(act.begin(), act.end());
  r.m = compute_metrics(a.data(), ref.data(), n);
  std::string why;
  if (check.kind == "tolerance") {
    Tolerance tol;
    tol.atol = check.atol;
    tol.rtol = check.atol >= 0 ? std::max(check.rtol, 0.0) : -1;
    tol.max_abs = check.max_abs;
    tol.rel_l2 = check.rel_l2;
    r.violations = check.atol >= 0 ? allclose_violations(a.data(), ref.data(), n, tol.atol, tol.rtol) : 0;
    why = check_tolerance(r.m, r.violations, tol);
  } else if (check.kind == "exact") {
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (!(act[i] == round_to_dtype(dt, ref[i])) && !bad++) first = i;
    if (bad)
      why = fmt("%.0f of %.0f elements differ from the reference; first at %.0f: ",
                static_cast<double>(bad), static_cast<double>(n), static_cast<double>(first)) +
            fmt("%.9g, want %.9g", act[first], round_to_dtype(dt, ref[first]));
    r.violations = bad;
  } else {  // topk: in range, distinct per row, and the values there are the top-k values in order
    const std::size_t of = static_cast<std::size_t>(check.of);
    const std::vector<double>& x = inputs[of];
    const std::size_t len = static_cast<std::size_t>(case_.shapes[of].back());
    const std::size_t kk = static_cast<std::size_t>(case_.shapes[slot].back());
    for (std::size_t row = 0; row * kk < n && why.empty(); ++row) {
      std::set<std::int64_t> seen;
      for (std::size_t j = 0; j < kk && why.empty(); ++j) {
        const double idx = act[row * kk + j], want_idx = ref[row * kk + j];
        const double rr = static_cast<double>(row), jj = static_cast<double>(j);
        if (!(idx >= 0 && idx < static_cast<double>(len)) || idx != std::floor(idx)) {
          why = fmt("row %.0f, entry %.0f: index %.17g is outside [0, %.0f)", rr, jj, idx, static_cast<double>(len));
        } else if (!seen.insert(static_cast<std::int64_t>(idx)).second) {
          why = fmt("row %.0f, entry %.0f: index %.0f appears twice", rr, jj, idx);
        } else if (!(want_idx >= 0 && want_idx < static_cast<double>(len))) {
          r.reference_fault = true;
          why = fmt("row %.0f, entry %.0f: the reference's index %.17g is out of range", rr, jj, want_idx);
        } else {
          const double v = x[row * len + static_cast<std::size_t>(idx)], w = x[row * len + static_cast<std::size_t>(want_idx)];
          if (v != w)
            why = fmt("row %.0f, entry %.0f: index %.0f holds %.9g; ", rr, jj, idx, v) +
                  fmt("the top-k value there is %.9g (ties may come in any order)", w);
        }
      }
    }
  }
  r.reason = why.empty() ? "" : "output " + out.name + " (" + check.kind + " check): " + why;
  return r;
}

std::vector<double> problem_lazy_output(const ProblemSpec& spec, const SpecCase& c, std::size_t k,
                                        const SpecLazy& l, const std::vector<double>& ref,
                                        const SpecInputs& inputs) {
  const std::size_t slot = static_cast<std::size_t>(spec.outputs[k].slot);
  const kfleet_dtype dt = spec.tensors[slot].dtype;
  const SpecCase& case_ = c;
  const std::size_t n = ref.size();
  const std::size_t row = static_cast<std::size_t>(case_.shapes[slot].back());
  std::vector<double> v(n, 0.0);
  if (l.kind == "mean") {
    const double mean = n ? std::accumulate(ref.begin(), ref.end(), 0.0) / static_cast<double>(n) : 0.0;
    std::fill(v.begin(), v.end(), round_to_dtype(dt, mean));
  } else if (l.kind == "copy") {
    const auto& x = inputs[static_cast<std::size_t>(l.input)];
    for (std::size_t i = 0; i < n && i < x.size(); ++i) v[i] = round_to_dtype(dt, x[i]);
  } else if (l.kind == "iota") {
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i % row);
  }
  return v;
}

std::vector<int> slots_checks_read(const ProblemSpec& spec) {
  std::set<int> need;
  for (const auto& out : spec.outputs) {
    if (out.check.kind == "topk") need.insert(out.check.of);
    for (const auto& l : out.lazy)
      if (l.kind == "copy") need.insert(l.input);
  }
  return std::vector<int>(need.begin(), need.end());
}

std::string lazy_name(const ProblemSpec& spec, const SpecLazy& l) {
  return l.kind == "copy" ? "copy of " + spec.tensors[static_cast<std::size_t>(l.input)].name : l.kind;
}

}  // namespace kfleet::harness
