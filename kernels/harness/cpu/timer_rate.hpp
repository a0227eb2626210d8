#pragma once
// How fast the GPU's timer ran against the host's clock (PROTOCOL.md, "The GPU's timer").
// Every duration the benchmark reports (activity spans, events) is read off the GPU's own timer
// (%globaltimer). On an H100 the reference kernel measured at two levels 0.7 % apart for minutes
// at a time, at the same SM cycles, and the SM clock probe (cycles over timer nanoseconds) read
// about 1994 instead of 1980 MHz at the faster one while nvidia-smi reported 1980 MHz: what a
// timer running slow would show. So each sample's clock probe also leaves a pair (host
// CLOCK_MONOTONIC_RAW, GPU timer), and the benchmark scales its durations to the host's clock.
// That corrects a drifting timer, not an SM that really runs faster (PROTOCOL.md says what is
// not yet shown).
// The rate is the median of the slopes between pairs a fixed lag apart: a single jump of either
// clock, or one late host stamp, moves only the slopes that span it.
// Pure logic, tested without a GPU.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace kfleet::harness {

struct TimerStamp {
  double host_ns = 0;  // CLOCK_MONOTONIC_RAW when the host saw the probe end
  double gpu_ns = 0;   // %globaltimer at the probe's end
};

struct TimerRate {
  double ppm = NAN;       // (GPU timer rate / host clock rate - 1) * 1e6; NaN: not measured
  double scale = 1.0;     // multiply GPU durations by this to get host-clock durations
  std::size_t slopes = 0;
  double span_s = 0;      // host time between the first and the last stamp
  std::string note;       // why the durations were not scaled, when they were not
};

// Durations are scaled only when the stamps span at least `min_span_s` of host time (shorter
// spans leave the stamps' latency jitter too large next to the effect) and the rate is within
// `max_abs_ppm` of the host's (beyond it the stamps, not the timer, are suspect).
inline TimerRate timer_rate(const std::vector<TimerStamp>& s, double min_span_s = 0.5,
                            double max_abs_ppm = 20000) {
  TimerRate r;
  if (s.size() < 3) {
    r.note = "fewer than 3 timer stamps";
    return r;
  }
  r.span_s = (s.back().host_ns - s.front().host_ns) / 1e9;
  if (!(r.span_s >= min_span_s)) {
    r.note = "timer stamps span less than the minimum host time";
    return r;
  }
  const std::size_t lag = std::max<std::size_t>(1, s.size() / 4);
  std::vector<double> slopes;
  for (std::size_t i = 0; i + lag < s.size(); ++i) {
    const double dh = s[i + lag].host_ns - s[i].host_ns;
    const double dg = s[i + lag].gpu_ns - s[i].gpu_ns;
    if (dh > 0 && std::isfinite(dg)) slopes.push_back(dg / dh);
  }
  r.slopes = slopes.size();
  if (slopes.empty()) {
    r.note = "no timer stamps in host order";
    return r;
  }
  const auto mid = slopes.begin() + slopes.size() / 2;
  std::nth_element(slopes.begin(), mid, slopes.end());
  double slope = *mid;
  if (slopes.size() % 2 == 0) slope = (slope + *std::max_element(slopes.begin(), mid)) / 2;
  r.ppm = (slope - 1) * 1e6;
  if (!(std::fabs(r.ppm) <= max_abs_ppm)) {
    r.note = "the GPU timer's rate is implausible next to the host's: durations left unscaled";
    return r;
  }
  r.scale = 1 / slope;
  return r;
}

}  // namespace kfleet::harness
