#pragma once
// Statistics for timing samples and performance verdicts (MEASUREMENT.md): summaries, and a
// bootstrap confidence interval of the candidate/baseline ratio, decided against a threshold δ:
// improved (CI entirely below -δ), regressed (entirely above +δ), same (entirely within ±δ),
// else inconclusive. Deterministic for a given seed.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kfleet::stats {

struct Summary {
  std::size_t n = 0;
  double median = 0, mean = 0, stdev = 0, min = 0, max = 0, p10 = 0, p90 = 0;
  double rel_stdev_pct() const { return mean > 0 ? 100.0 * stdev / mean : 0; }
};
Summary summarize(std::vector<double> xs);
double quantile(std::vector<double> xs, double q);  // linear interpolation, q in [0, 1]

struct PerfComparison {
  std::string verdict;   // improved | regressed | same | inconclusive
  double delta_pct = 0;  // (candidate / baseline - 1) * 100 at the point estimate (median)
  double ci_low_pct = 0, ci_high_pct = 0;
  std::size_t n = 0;     // rounds or samples used
};

std::string decide(double ci_low_pct, double ci_high_pct, double threshold_pct);

// Paired A/B rounds (baseline and candidate interleaved on one agent): per-round ratios
// candidate/baseline; bootstrap CI of their median.
PerfComparison compare_rounds(const std::vector<double>& ratios, double threshold_pct,
                              double confidence = 0.95, int resamples = 2000,
                              std::uint64_t seed = 1);

// Unpaired samples (a stored baseline): bootstrap CI of median(candidate) / median(baseline).
PerfComparison compare_samples(const std::vector<double>& candidate,
                               const std::vector<double>& baseline, double threshold_pct,
                               double confidence = 0.95, int resamples = 2000,
                               std::uint64_t seed = 1);

// A fixed baseline value (no samples): CI of the candidate's median / value.
PerfComparison compare_to_value(const std::vector<double>& candidate, double baseline_value,
                                double threshold_pct, double confidence = 0.95,
                                int resamples = 2000, std::uint64_t seed = 1);

// How many times faster a kernel is than a reference (kfleet's PyTorch references of a problem:
// eager, torch.compile), both timed by the same replay: median(reference) / median(kernel),
// above 1 when the kernel is faster. The interval is the bootstrap percentile interval of that
// ratio, each resample drawing both sample sets anew (they are independent: two processes).
struct Speedup {
  bool ok = false;             // false: a side has no samples, a non-finite one, or a median <= 0
  double point = 0;            // the ratio of the medians
  // Absent below 3 samples on a side: two values say nothing about the spread.
  std::optional<double> ci_low, ci_high;
  std::size_t n = 0;           // the smaller side's sample count
};
Speedup speedup(const std::vector<double>& kernel_us, const std::vector<double>& reference_us,
                double confidence = 0.95, int resamples = 2000, std::uint64_t seed = 1);

// fast_p (KernelBench): the share of a set of kernels that are correct and more than p times
// faster than a baseline. Every kernel counts in the denominator, including those with no
// speedup (a reference that could not be timed, a kernel that failed its gates): they are not
// fast.
struct FastPKernel {
  bool correct = false;             // passed correctness (a performance rejection still did)
  std::optional<double> speedup;    // over the baseline, the point estimate
};
struct FastP {
  double p = 1;
  std::size_t fast = 0;    // correct and speedup > p
  std::size_t total = 0;   // the denominator: every kernel given
  std::size_t timed = 0;   // of them, those with a speedup at all
  double share() const { return total ? static_cast<double>(fast) / static_cast<double>(total) : 0; }
};
FastP fast_p(const std::vector<FastPKernel>& kernels, double p);

}  // namespace kfleet::stats
