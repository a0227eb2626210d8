#pragma once
// When warm-up is over (MEASUREMENT.md step 2): the GPU has been kept busy for a minimum time
// (clocks and memory clock ramp over hundreds of milliseconds after an idle gap, longer than a
// few launches of a long kernel take) and the median of the last window of launches agrees with
// the window before it. Bounded by a maximum time. Pure logic, tested without a GPU.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace kfleet::harness {

struct WarmupConfig {
  double min_s = 0.5, max_s = 2;  // min_s is clamped to max_s
  std::size_t window = 8;         // launches per window
  double tolerance_pct = 0.5;     // windows' medians this close: timings have settled
};

class WarmupRule {
 public:
  explicit WarmupRule(WarmupConfig c) : c_(c) { c_.window = std::max<std::size_t>(c_.window, 1); }

  // Records one warm-up launch; returns "" to go on, "stable", or "max_time" (not stable).
  std::string add(double us, double elapsed_s) {
    times_.push_back(us);
    if (elapsed_s >= std::min(c_.min_s, c_.max_s) && settled()) return "stable";
    if (elapsed_s >= c_.max_s) return "max_time";
    return "";
  }

  // Change between the last two windows' medians, in %; NaN until there are two windows.
  double last_change_pct() const {
    if (times_.size() < 2 * c_.window) return NAN;
    const double now = window_median(times_.size() - c_.window);
    const double before = window_median(times_.size() - 2 * c_.window);
    return before > 0 ? 100.0 * (now - before) / before : NAN;
  }
  std::size_t launches() const { return times_.size(); }

 private:
  bool settled() const {
    const double d = last_change_pct();
    return std::isfinite(d) && std::fabs(d) <= c_.tolerance_pct;
  }
  double window_median(std::size_t from) const {
    std::vector<double> w(times_.begin() + from, times_.begin() + from + c_.window);
    std::sort(w.begin(), w.end());
    const std::size_t m = w.size() / 2;
    return w.size() % 2 ? w[m] : 0.5 * (w[m - 1] + w[m]);
  }

  WarmupConfig c_;
  std::vector<double> times_;
};

}  // namespace kfleet::harness
