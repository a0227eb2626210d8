// The benchmark stage (PROTOCOL.md): warm-up until timings stop improving, then cold samples
// (L2 flushed and output poisoned outside the timed window), events around each launch, a
// stop rule, the SM clock per sample, an on-device re-check of every timed run's output, and
// a roofline floor below which a result is suspect.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "harness.hpp"
#include "../cpu/throttle_filter.hpp"
#include "../cpu/warmup_rule.hpp"

namespace kfleet::harness {
namespace {

constexpr std::size_t kMinFlushBytes = 64u << 20;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class EventTimer {
 public:
  EventTimer() {
    KFLEET_GPU_CHECK(gpuEventCreate(&start_));
    KFLEET_GPU_CHECK(gpuEventCreate(&stop_));
  }
  ~EventTimer() {
    KFLEET_GPU_CHECK(gpuEventDestroy(start_));
    KFLEET_GPU_CHECK(gpuEventDestroy(stop_));
  }
  // Times one launch on the default stream; returns microseconds, or NaN if the kernel
  // declined the case. Synchronizes the whole device so side-stream work is inside the window.
  double time_launch(Problem& p, int* status) {
    KFLEET_GPU_CHECK(gpuEventRecord(start_, nullptr));
    set_phase("kernel");
    *status = p.launch(nullptr);
    KFLEET_GPU_CHECK(gpuGetLastError());
    KFLEET_GPU_CHECK(gpuEventRecord(stop_, nullptr));
    KFLEET_GPU_CHECK(gpuDeviceSynchronize());
    set_phase("setup");
    float ms = 0;
    KFLEET_GPU_CHECK(gpuEventElapsedTime(&ms, start_, stop_));
    return *status == KFLEET_OK ? 1000.0 * ms : NAN;
  }

 private:
  gpuEvent_t start_{}, stop_{};
};

}  // namespace

int run_benchmark(const Options& o, const DeviceInfo& dev) {
  auto problem = make_problem(o, o.seeds.front());
  EventTimer timer;
  int status = KFLEET_OK;
  auto declined = [&] {
    JsonLine("bench").str("case", o.case_name).boolean("unsupported", true)
        .str("reason", "kernel returned status " + std::to_string(status) + " for this case")
        .print();
    return 1;
  };

  // Warm-up: untimed in spirit (its times only show when they have settled). The clock seen
  // while the GPU is busy sets the reference the throttle filter compares samples with.
  const auto warm_start = std::chrono::steady_clock::now();
  WarmupRule warm({std::min(o.warmup_min_s, o.warmup_max_s), o.warmup_max_s});
  ThrottleFilter throttle(o.throttle_pct);
  std::string warm_end;
  double warm_last_us = NAN;
  while (warm_end.empty() && o.warmup_max_s > 0) {
    warm_last_us = timer.time_launch(*problem, &status);
    if (status != KFLEET_OK) return declined();
    throttle.observe(measure_sm_clock_mhz());
    warm_end = warm.add(warm_last_us, seconds_since(warm_start));
  }
  JsonLine("warmup").integer("launches", (long long)warm.launches())
      .num("seconds", seconds_since(warm_start)).num("last_us", warm_last_us)
      .num("last_change_pct", warm.last_change_pct()).boolean("stable", warm_end == "stable")
      .num("clock_reference_mhz", throttle.reference_mhz()).print();

  const std::size_t flush_bytes = o.l2_flush ? std::max<std::size_t>(2 * dev.l2_bytes, kMinFlushBytes) : 0;
  DeviceBuffer flush(flush_bytes);
  const double atol = o.tolerance.atol >= 0 ? o.tolerance.atol : 0;
  const double rtol = o.tolerance.atol >= 0 ? o.tolerance.rtol : 0;
  StopRule rule(o.stop);
  std::vector<double> samples, clocks;
  std::size_t timed_runs = 0;
  std::string stop_reason, recheck_reason;
  float recheck_max_abs = 0;
  const auto sample_start = std::chrono::steady_clock::now();
  while (stop_reason.empty()) {
    if (flush_bytes)
      KFLEET_GPU_CHECK(gpuMemsetAsync(flush.get(), static_cast<int>(samples.size() & 0xFF),
                                      flush_bytes, nullptr));
    KFLEET_GPU_CHECK(gpuMemsetAsync(problem->output().get(), 0xFF, problem->output().bytes(), nullptr));
    const double us = timer.time_launch(*problem, &status);
    if (status != KFLEET_OK) return declined();
    const double clock = measure_sm_clock_mhz();
    const bool slowed = throttle.throttled(clock);
    if (!slowed) {
      samples.push_back(us);
      clocks.push_back(clock);
    }
    ++timed_runs;
    const DeviceCheck c = check_on_device(problem->output().get(), problem->out_dtype(),
                                          problem->reference_device(), problem->out_elements(),
                                          atol, rtol);
    recheck_max_abs = std::max(recheck_max_abs, c.max_abs);
    if (recheck_reason.empty()) {
      const std::string run = "timed run " + std::to_string(timed_runs - 1) + ": ";
      if (c.unwritten) recheck_reason = run + std::to_string(c.unwritten) + " elements never written";
      else if (c.nan || c.inf) recheck_reason = run + "output has NaN/Inf";
      else if (atol > 0 || rtol > 0 ? c.violations != 0 : false)
        recheck_reason = run + std::to_string(c.violations) + " elements outside atol/rtol";
      else if (o.tolerance.max_abs >= 0 && c.max_abs > o.tolerance.max_abs)
        recheck_reason = run + "max_abs " + std::to_string(c.max_abs) + " over the bound";
    }
    stop_reason = slowed ? rule.time_up(seconds_since(sample_start))
                         : rule.add(us, seconds_since(sample_start));
  }
  if (samples.empty()) {
    JsonLine("bench").str("case", o.case_name).boolean("unsupported", true)
        .str("reason", "every sample ran with the SM clock over " + std::to_string(o.throttle_pct) +
                           " % below its best (" + std::to_string(throttle.reference_mhz()) +
                           " MHz): the GPU is throttled; let it cool or pass --throttle-pct 0")
        .print();
    return 1;
  }
  const std::string changed = problem->inputs_changed();
  if (recheck_reason.empty() && !changed.empty()) recheck_reason = changed;

  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  auto q = [&](double p) {
    const double pos = p * (sorted.size() - 1);
    const std::size_t lo = (std::size_t)pos, hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
  };
  double mean = 0;
  for (double s : samples) mean += s / samples.size();
  double var = 0;
  for (double s : samples) var += (s - mean) * (s - mean);
  const double stdev = samples.size() > 1 ? std::sqrt(var / (samples.size() - 1)) : 0;
  const double median = q(0.5);
  const double floor_bw = dev.peak_bw_gbs > 0 ? problem->bytes / (dev.peak_bw_gbs * 1e3) : 0;
  const double floor_fl = dev.peak_tflops > 0 ? problem->flops / (dev.peak_tflops * 1e6) : 0;
  const double floor_us = std::max(floor_bw, floor_fl);
  const bool suspect = median < floor_us;
  JsonLine("bench")
      .str("case", o.case_name)
      .integer("seed", (long long)o.seeds.front())
      .integer("n", (long long)samples.size())
      .num("median_us", median).num("mean_us", mean).num("stdev_us", stdev)
      .num("min_us", sorted.front()).num("max_us", sorted.back())
      .num("p10_us", q(0.1)).num("p90_us", q(0.9))
      .num("rel_stdev_pct", mean > 0 ? 100 * stdev / mean : 0)
      .str("stop_reason", stop_reason)
      .integer("throttled_discarded", (long long)throttle.discarded())
      .num("clock_reference_mhz", throttle.reference_mhz())
      .integer("l2_flush_bytes", (long long)flush_bytes)
      .nums("samples_us", samples).nums("sm_clock_mhz", clocks)
      .num("flops", problem->flops).num("bytes", problem->bytes)
      .num("tflops", problem->flops / (median * 1e6)).num("gbs", problem->bytes / (median * 1e3))
      .num("roofline_floor_us", floor_us)
      .boolean("suspect", suspect)
      .str("suspect_reason", suspect ? "median " + std::to_string(median) +
                                           " us is below the roofline floor " +
                                           std::to_string(floor_us) + " us"
                                     : "")
      .raw("recheck", JsonLine("recheck").boolean("pass", recheck_reason.empty())
                          .integer("checked_runs", (long long)timed_runs)
                          .num("max_abs", recheck_max_abs).str("reason", recheck_reason)
                          .text())
      .print();
  return recheck_reason.empty() ? 0 : 1;
}

}  // namespace kfleet::harness
