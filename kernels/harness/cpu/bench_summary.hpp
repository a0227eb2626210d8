#pragma once
// The summary phase of the benchmark stage (PROTOCOL.md): the samples' statistics and which
// suspect sign, if any, the bench line names. Pure logic, so that the verdict the timing gives
// is tested without a GPU; benchmark.cu's summarize() prints what these return.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "json_line.hpp"

namespace kfleet::harness {

// Linear interpolation between order statistics; NaN for no values.
inline double quantile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = p * (v.size() - 1);
  const std::size_t lo = (std::size_t)pos, hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

struct SampleStats {
  double median = NAN, mean = 0, stdev = 0, min = NAN, max = NAN, p10 = NAN, p90 = NAN;
  double rel_stdev_pct = 0;
};

// Of at least one sample.
inline SampleStats sample_stats(const std::vector<double>& samples) {
  SampleStats s;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  for (double x : samples) s.mean += x / samples.size();
  double var = 0;
  for (double x : samples) var += (x - s.mean) * (x - s.mean);
  s.stdev = samples.size() > 1 ? std::sqrt(var / (samples.size() - 1)) : 0;
  s.median = quantile(samples, 0.5);
  s.min = sorted.front();
  s.max = sorted.back();
  s.p10 = quantile(samples, 0.1);
  s.p90 = quantile(samples, 0.9);
  s.rel_stdev_pct = s.mean > 0 ? 100 * s.stdev / s.mean : 0;
  return s;
}

// What the timed runs showed that makes a timing untrustworthy.
struct SuspectSigns {
  std::size_t timed_runs = 0;
  std::size_t structural = 0, disagreements = 0;  // samples with each sign
  std::string structural_reason, disagreement_reason;  // the first of each, named
  std::string floor_suspect;  // judge_floor's: the median above 95 % of a peak
  double replay_median = NAN, median = NAN;  // the replay probe's, the fresh samples'
};

// A replay of seen inputs faster than this fraction of the fresh median is a cache.
constexpr double kReplayFraction = 0.75;

// "" or the bench line's suspect_reason, first match wins: a structural sign (work outside
// every launch, none recorded) or the span and the events disagreeing, in at least a tenth of
// the samples and at least 2 (one hiccup of the host or of the clock conversion is not a trick;
// a trick shows in every sample), or the median above 95 % of a peak, or a replay of seen
// inputs much faster than fresh ones.
inline std::string suspect_reason(const SuspectSigns& s) {
  const std::size_t enough = std::max<std::size_t>(2, s.timed_runs / 10);
  if (s.structural >= enough)
    return s.structural_reason + " (" + std::to_string(s.structural) + " of " +
           std::to_string(s.timed_runs) + " samples)";
  if (s.disagreements >= enough)
    return s.disagreement_reason + " (" + std::to_string(s.disagreements) + " of " +
           std::to_string(s.timed_runs) + " samples)";
  if (!s.floor_suspect.empty()) return s.floor_suspect;
  if (s.replay_median < kReplayFraction * s.median)
    return "the kernel took " + JsonLine::number(s.replay_median) +
           " us on inputs it had already seen but " + JsonLine::number(s.median) +
           " us on fresh ones: it keeps results across launches (a content-keyed cache)";
  return "";
}

}  // namespace kfleet::harness
