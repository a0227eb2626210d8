// Verdict statistics (MEASUREMENT.md §6-7). The bootstrap uses its own seeded xoshiro256**
// generator rather than <random> distributions, whose output differs between standard libraries:
// the same samples and seed must give the same verdict on every host and toolchain.
#include "kfleet/common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>

namespace kfleet::stats {
namespace {

// Fewer than this many rounds/samples cannot support a verdict: a bootstrap of two values says
// nothing about the spread, and would call a single noisy pair "regressed".
constexpr std::size_t kMinSamplesForVerdict = 3;

std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Xoshiro256 {
 public:
  explicit Xoshiro256(std::uint64_t seed) {
    for (auto& w : s_) w = splitmix64(seed);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) by multiply-high (Lemire); the residual bias is below 2^-40 for any
  // sample count we see, far under the bootstrap's own error.
  std::size_t below(std::size_t n) {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

double sorted_quantile(const std::vector<double>& s, double q) {
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - static_cast<double>(lo));
}

double median_of(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return sorted_quantile(xs, 0.5);
}

// Median of one bootstrap resample of xs, drawn into scratch.
double resampled_median(const std::vector<double>& xs, Xoshiro256& rng,
                        std::vector<double>& scratch) {
  scratch.resize(xs.size());
  for (auto& v : scratch) v = xs[rng.below(xs.size())];
  std::sort(scratch.begin(), scratch.end());
  return sorted_quantile(scratch, 0.5);
}

// `resamples` bootstrap ratios median(num*) / median(den*), each side resampled anew: the
// numerator's resample first, then the denominator's (the order fixes the seeded stream).
std::vector<double> bootstrap_ratios(const std::vector<double>& num, const std::vector<double>& den,
                                     int resamples, std::uint64_t seed) {
  Xoshiro256 rng(seed);
  std::vector<double> boot(static_cast<std::size_t>(resamples)), scratch;
  for (auto& b : boot) {
    const double n = resampled_median(num, rng, scratch);
    const double d = resampled_median(den, rng, scratch);
    b = d > 0 ? n / d : std::numeric_limits<double>::infinity();
  }
  return boot;
}

bool all_finite(const std::vector<double>& xs) {
  return std::all_of(xs.begin(), xs.end(), [](double v) { return std::isfinite(v); });
}

void check_parameters(double confidence, int resamples) {
  // Callers pass constants or validated job fields; anything else is a programming error.
  if (!(confidence > 0 && confidence < 1) || resamples < 1) std::abort();
}

PerfComparison inconclusive(double point_ratio, std::size_t n) {
  PerfComparison c;
  c.verdict = "inconclusive";
  c.delta_pct = std::isfinite(point_ratio) ? (point_ratio - 1) * 100 : 0;
  c.ci_low_pct = -std::numeric_limits<double>::infinity();
  c.ci_high_pct = std::numeric_limits<double>::infinity();
  c.n = n;
  return c;
}

// Percentile CI of the bootstrap ratios, turned into a verdict.
PerfComparison from_bootstrap(std::vector<double> ratios, double point_ratio,
                              double threshold_pct, double confidence, std::size_t n) {
  std::sort(ratios.begin(), ratios.end());
  const double alpha = (1 - confidence) / 2;
  PerfComparison c;
  c.delta_pct = (point_ratio - 1) * 100;
  c.ci_low_pct = (sorted_quantile(ratios, alpha) - 1) * 100;
  c.ci_high_pct = (sorted_quantile(ratios, 1 - alpha) - 1) * 100;
  c.n = n;
  c.verdict = decide(c.ci_low_pct, c.ci_high_pct, threshold_pct);
  return c;
}

}  // namespace

double quantile(std::vector<double> xs, double q) {
  std::sort(xs.begin(), xs.end());
  return sorted_quantile(xs, q);
}

Summary summarize(std::vector<double> xs) {
  Summary s;
  s.n = xs.size();
  if (xs.empty()) return s;
  std::sort(xs.begin(), xs.end());
  s.min = xs.front();
  s.max = xs.back();
  s.median = sorted_quantile(xs, 0.5);
  s.p10 = sorted_quantile(xs, 0.10);
  s.p90 = sorted_quantile(xs, 0.90);
  s.mean = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
  if (xs.size() > 1) {
    double ss = 0;
    for (double v : xs) ss += (v - s.mean) * (v - s.mean);
    s.stdev = std::sqrt(ss / static_cast<double>(xs.size() - 1));  // sample stdev
  }
  return s;
}

std::string decide(double ci_low_pct, double ci_high_pct, double threshold_pct) {
  const double d = std::abs(threshold_pct);
  if (ci_low_pct > d) return "regressed";
  if (ci_high_pct < -d) return "improved";
  if (ci_low_pct >= -d && ci_high_pct <= d) return "same";
  return "inconclusive";
}

PerfComparison compare_rounds(const std::vector<double>& ratios, double threshold_pct,
                              double confidence, int resamples, std::uint64_t seed) {
  check_parameters(confidence, resamples);
  if (!all_finite(ratios)) return inconclusive(std::nan(""), ratios.size());
  const double point = ratios.empty() ? std::nan("") : median_of(ratios);
  if (ratios.size() < kMinSamplesForVerdict) return inconclusive(point, ratios.size());
  Xoshiro256 rng(seed);
  std::vector<double> boot(static_cast<std::size_t>(resamples)), scratch;
  for (auto& b : boot) b = resampled_median(ratios, rng, scratch);
  return from_bootstrap(std::move(boot), point, threshold_pct, confidence, ratios.size());
}

PerfComparison compare_samples(const std::vector<double>& candidate,
                               const std::vector<double>& baseline, double threshold_pct,
                               double confidence, int resamples, std::uint64_t seed) {
  check_parameters(confidence, resamples);
  const std::size_t n = std::min(candidate.size(), baseline.size());
  if (!all_finite(candidate) || !all_finite(baseline) || candidate.empty() || baseline.empty())
    return inconclusive(std::nan(""), n);
  const double base_median = median_of(baseline);
  if (!(base_median > 0)) return inconclusive(std::nan(""), n);
  const double point = median_of(candidate) / base_median;
  if (n < kMinSamplesForVerdict) return inconclusive(point, n);
  return from_bootstrap(bootstrap_ratios(candidate, baseline, resamples, seed), point, threshold_pct,
                        confidence, n);
}

PerfComparison compare_to_value(const std::vector<double>& candidate, double baseline_value,
                                double threshold_pct, double confidence, int resamples,
                                std::uint64_t seed) {
  check_parameters(confidence, resamples);
  if (!all_finite(candidate) || candidate.empty() || !(baseline_value > 0) ||
      !std::isfinite(baseline_value))
    return inconclusive(std::nan(""), candidate.size());
  const double point = median_of(candidate) / baseline_value;
  if (candidate.size() < kMinSamplesForVerdict) return inconclusive(point, candidate.size());
  Xoshiro256 rng(seed);
  std::vector<double> boot(static_cast<std::size_t>(resamples)), scratch;
  for (auto& b : boot) b = resampled_median(candidate, rng, scratch) / baseline_value;
  return from_bootstrap(std::move(boot), point, threshold_pct, confidence, candidate.size());
}

Speedup speedup(const std::vector<double>& kernel_us, const std::vector<double>& reference_us,
                double confidence, int resamples, std::uint64_t seed) {
  check_parameters(confidence, resamples);
  Speedup s;
  s.n = std::min(kernel_us.size(), reference_us.size());
  if (kernel_us.empty() || reference_us.empty() || !all_finite(kernel_us) || !all_finite(reference_us))
    return s;
  const double kernel = median_of(kernel_us), reference = median_of(reference_us);
  if (!(kernel > 0) || !(reference > 0)) return s;
  s.ok = true;
  s.point = reference / kernel;
  if (s.n < kMinSamplesForVerdict) return s;
  std::vector<double> boot = bootstrap_ratios(reference_us, kernel_us, resamples, seed);
  std::sort(boot.begin(), boot.end());
  const double alpha = (1 - confidence) / 2;
  s.ci_low = sorted_quantile(boot, alpha);
  s.ci_high = sorted_quantile(boot, 1 - alpha);
  return s;
}

FastP fast_p(const std::vector<FastPKernel>& kernels, double p) {
  FastP f;
  f.p = p;
  f.total = kernels.size();
  for (const auto& k : kernels) {
    if (k.speedup) ++f.timed;
    if (k.correct && k.speedup && std::isfinite(*k.speedup) && *k.speedup > p) ++f.fast;
  }
  return f;
}

}  // namespace kfleet::stats
