#pragma once
// Statistics for timing samples and performance verdicts (MEASUREMENT.md): summaries, and a
// bootstrap confidence interval of the candidate/baseline ratio, decided against a threshold δ:
// improved (CI entirely below -δ), regressed (entirely above +δ), same (entirely within ±δ),
// else inconclusive. Deterministic for a given seed.
#include <cstdint>
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

}  // namespace kfleet::stats
