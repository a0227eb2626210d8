#pragma once
// Change-point detection over one kernel's timing history on one GPU class (MEASUREMENT.md §8):
// binary segmentation on mean shifts, each split kept only when a permutation test says it is
// unlikely under "no change". Deterministic for a given seed.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kfleet::stats {

struct ChangePoint {
  std::size_t index = 0;      // first point of the new regime
  double before_mean = 0, after_mean = 0;
  double shift_pct = 0;       // (after / before - 1) * 100
  double p_value = 1;
};

struct ChangePointOptions {
  std::size_t min_segment = 2;  // points on each side of a split
  double alpha = 0.05;          // permutation-test significance
  double min_shift_pct = 0.5;   // smaller shifts are noise for kernel timings
  int permutations = 199;
  std::uint64_t seed = 1;
};

// Change points in index order; empty when the series looks like one regime.
std::vector<ChangePoint> detect_change_points(const std::vector<double>& series,
                                              const ChangePointOptions& o = {});

}  // namespace kfleet::stats
