// Binary segmentation: find the split that best separates two means in a segment, keep it when
// a permutation test rejects "one regime" and the shift is large enough to matter, then recurse
// into both halves. E-divisive (Otava) would also catch variance changes; kernel timing
// regressions are mean shifts, and this is simpler to reason about and to test.
#include "kfleet/common/changepoint.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace kfleet::stats {

namespace {

struct Split {
  std::size_t k = 0;  // split before index k (relative to the segment)
  double stat = -1;
};

// The weighted mean difference |mean(L) - mean(R)| * sqrt(nL * nR / n), maximised over k.
Split best_split(const std::vector<double>& xs, std::size_t min_seg) {
  Split best;
  const std::size_t n = xs.size();
  if (n < 2 * min_seg) return best;
  const double total = std::accumulate(xs.begin(), xs.end(), 0.0);
  double left = 0;
  for (std::size_t k = 1; k < n; ++k) {
    left += xs[k - 1];
    if (k < min_seg || n - k < min_seg) continue;
    const double nl = static_cast<double>(k), nr = static_cast<double>(n - k);
    const double stat =
        std::abs(left / nl - (total - left) / nr) * std::sqrt(nl * nr / static_cast<double>(n));
    if (stat > best.stat) best = {k, stat};
  }
  return best;
}

void segment(const std::vector<double>& series, std::size_t lo, std::size_t hi,
             const ChangePointOptions& o, std::mt19937_64& rng, std::vector<ChangePoint>& out) {
  std::vector<double> xs(series.begin() + static_cast<std::ptrdiff_t>(lo),
                         series.begin() + static_cast<std::ptrdiff_t>(hi));
  const Split s = best_split(xs, o.min_segment);
  if (s.stat <= 0) return;
  const double before = std::accumulate(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(s.k), 0.0) /
                        static_cast<double>(s.k);
  const double after = std::accumulate(xs.begin() + static_cast<std::ptrdiff_t>(s.k), xs.end(), 0.0) /
                       static_cast<double>(xs.size() - s.k);
  const double shift = before != 0 ? (after / before - 1) * 100 : 0;
  if (std::abs(shift) < o.min_shift_pct) return;
  int as_extreme = 0;
  std::vector<double> perm = xs;
  for (int i = 0; i < o.permutations; ++i) {
    std::shuffle(perm.begin(), perm.end(), rng);
    if (best_split(perm, o.min_segment).stat >= s.stat) ++as_extreme;
  }
  const double p = (as_extreme + 1.0) / (o.permutations + 1.0);
  if (p > o.alpha) return;
  segment(series, lo, lo + s.k, o, rng, out);
  out.push_back({lo + s.k, before, after, shift, p});
  segment(series, lo + s.k, hi, o, rng, out);
}

}  // namespace

std::vector<ChangePoint> detect_change_points(const std::vector<double>& series,
                                              const ChangePointOptions& o) {
  std::vector<ChangePoint> out;
  std::mt19937_64 rng(o.seed);
  segment(series, 0, series.size(), o, rng, out);
  std::sort(out.begin(), out.end(),
            [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  return out;
}

}  // namespace kfleet::stats
