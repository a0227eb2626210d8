#pragma once
// Throttled samples (MEASUREMENT.md step 5): a sample whose SM clock, measured right after it,
// is more than `tolerance_pct` below the clock the GPU holds running this kernel ran on a GPU
// slowed by something else (another tenant's heat, a thermal event) and is discarded rather
// than averaged into the result.
//
// The reference is the clock the warm-up settled at: the median of the readings of its second
// half, the kernel launched back to back. A kernel that draws the GPU to its power limit (a
// large GEMM on an H100, most heavy kernels on a power-limited L4) lowers the clock itself and
// holds it there; that clock is its speed, so its samples are kept. Comparing with the best
// clock ever seen instead discarded every sample of such a kernel: no result at all (PROTOCOL.md,
// "The rest of the line"). Without a warm-up, the reference is the best clock seen so far.
// Pure logic, tested without a GPU.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace kfleet::harness {

class ThrottleFilter {
 public:
  explicit ThrottleFilter(double tolerance_pct) : tolerance_pct_(tolerance_pct) {}

  // A reading taken while the GPU was busy with this kernel (warm-up): kept for settle(), and
  // the best clock seen rises with it.
  void observe(double clock_mhz) {
    if (!std::isfinite(clock_mhz) || clock_mhz <= 0) return;
    best_ = std::max(best_, clock_mhz);
    if (!settled_) warm_.push_back(clock_mhz);
  }
  // Ends the warm-up: the reference becomes the median of its second half's readings, and no
  // longer moves. Without a reading it stays the best clock seen.
  void settle() {
    if (settled_ || warm_.empty()) return;
    std::vector<double> tail(warm_.begin() + static_cast<std::ptrdiff_t>(warm_.size() / 2), warm_.end());
    std::nth_element(tail.begin(), tail.begin() + static_cast<std::ptrdiff_t>(tail.size() / 2), tail.end());
    settled_mhz_ = tail[tail.size() / 2];
    settled_ = true;
  }
  // Records a sample's clock; true when that sample should be discarded as throttled. Unknown
  // clocks (NaN: HIP) and a filter with tolerance <= 0 never discard.
  bool throttled(double clock_mhz) {
    // A sample's reading raises the best clock seen, but is not one the warm-up settles on.
    if (std::isfinite(clock_mhz) && clock_mhz > 0) best_ = std::max(best_, clock_mhz);
    const double ref = reference_mhz();
    const bool t = tolerance_pct_ > 0 && std::isfinite(clock_mhz) && ref > 0 &&
                   clock_mhz < ref * (1 - tolerance_pct_ / 100);
    if (t) ++discarded_;
    return t;
  }
  double reference_mhz() const { return settled_ ? settled_mhz_ : best_; }
  double best_mhz() const { return best_; }
  bool settled() const { return settled_; }
  std::size_t discarded() const { return discarded_; }

 private:
  double tolerance_pct_;
  double best_ = 0;
  std::vector<double> warm_;
  bool settled_ = false;
  double settled_mhz_ = 0;
  std::size_t discarded_ = 0;
};

}  // namespace kfleet::harness
