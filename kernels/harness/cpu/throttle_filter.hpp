#pragma once
// Throttled samples (MEASUREMENT.md step 5): a sample whose SM clock, measured right after it,
// is more than `tolerance_pct` below the highest clock this process has seen ran on a slowed
// GPU (power or thermal capping) and is discarded rather than averaged into the result.
// Pure logic, tested without a GPU.
#include <algorithm>
#include <cmath>
#include <cstddef>

namespace kfleet::harness {

class ThrottleFilter {
 public:
  explicit ThrottleFilter(double tolerance_pct) : tolerance_pct_(tolerance_pct) {}

  // Raises the reference clock with a reading taken while the GPU was busy (warm-up).
  void observe(double clock_mhz) {
    if (std::isfinite(clock_mhz) && clock_mhz > 0) reference_ = std::max(reference_, clock_mhz);
  }
  // Records a sample's clock; true when that sample should be discarded as throttled. Unknown
  // clocks (NaN: HIP) and a filter with tolerance <= 0 never discard.
  bool throttled(double clock_mhz) {
    observe(clock_mhz);
    const bool t = tolerance_pct_ > 0 && std::isfinite(clock_mhz) && reference_ > 0 &&
                   clock_mhz < reference_ * (1 - tolerance_pct_ / 100);
    if (t) ++discarded_;
    return t;
  }
  double reference_mhz() const { return reference_; }
  std::size_t discarded() const { return discarded_; }

 private:
  double tolerance_pct_;
  double reference_ = 0;
  std::size_t discarded_ = 0;
};

}  // namespace kfleet::harness
