#pragma once
// When to stop sampling (MEASUREMENT.md, NVBench's rule): enough samples and low enough noise,
// else a wall-time cap, else a sample cap. A strategy object so the loop stays simple and the
// rule is tested without a GPU.
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace kfleet::harness {

struct StopRuleConfig {
  std::size_t min_samples = 10, max_samples = 1000;
  double max_noise_pct = 0.5, max_time_s = 15;
};

class StopRule {
 public:
  explicit StopRule(StopRuleConfig c) : c_(c) {}
  // Records one sample; returns the stop reason ("" = keep sampling).
  std::string add(double sample_us, double elapsed_s) {
    ++n_;
    sum_ += sample_us;
    sum2_ += sample_us * sample_us;
    if (n_ >= c_.min_samples && rel_stdev_pct() <= c_.max_noise_pct) return "noise_target";
    if (elapsed_s >= c_.max_time_s) return "max_time";
    if (n_ >= c_.max_samples) return "max_samples";
    return "";
  }
  // The hard bounds alone (no noise target): for when the caller may not stop early yet.
  std::string limits(double elapsed_s) const {
    if (elapsed_s >= c_.max_time_s) return "max_time";
    if (n_ >= c_.max_samples) return "max_samples";
    return "";
  }
  // For a sample that is not recorded (discarded as throttled): still bounded by wall time.
  std::string time_up(double elapsed_s) const { return elapsed_s >= c_.max_time_s ? "max_time" : ""; }
  double rel_stdev_pct() const {
    if (n_ < 2) return INFINITY;
    const double mean = sum_ / n_;
    const double var = std::max(0.0, (sum2_ - n_ * mean * mean) / (n_ - 1));
    return mean > 0 ? 100.0 * std::sqrt(var) / mean : INFINITY;
  }

 private:
  StopRuleConfig c_;
  std::size_t n_ = 0;
  double sum_ = 0, sum2_ = 0;
};

}  // namespace kfleet::harness
