// The benchmark stage (PROTOCOL.md): warm-up until timings stop improving, then cold samples on
// fresh inputs (new content generated on the device before each sample, L2 flushed and output
// poisoned, all outside the timed window). A sample is the span of every GPU activity the launch
// caused, on any stream (CUPTI), cross-checked with events around the launch and the host clock;
// a random subset of samples, drawn after each has run, is re-checked against a reference for
// its own inputs; the median is held to the dense tensor and bandwidth peaks.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "harness.hpp"
#include "../cpu/throttle_filter.hpp"
#include "../cpu/warmup_rule.hpp"

namespace kfleet::harness {
namespace {

constexpr std::size_t kMinFlushBytes = 64u << 20;
// A replay of seen inputs faster than this fraction of the fresh median is a cache.
constexpr double kReplayFraction = 0.75;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double quantile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = p * (v.size() - 1);
  const std::size_t lo = (std::size_t)pos, hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

__global__ void harness_noop() {}

struct Launch {
  double event_us = NAN;
  std::uint64_t t0 = 0, t_return = 0, t1 = 0;
  int status = KFLEET_OK;
};

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
  // One launch on the legacy default stream between two events; the device must then go idle
  // within the bound (a persistent kernel never lets it). Host timestamps from the tracer's
  // clock when there is one.
  Launch time_launch(Problem& p, const ActivityTracer* tracer, const Options& o,
                     const std::string& case_name) {
    Launch l;
    read_only_ = inputs_read_only(true);  // a write to an input faults at once
    l.t0 = tracer ? tracer->now() : 0;
    KFLEET_GPU_CHECK(gpuEventRecord(start_, nullptr));
    set_phase("kernel");
    l.status = p.launch(nullptr);
    KFLEET_GPU_CHECK(gpuGetLastError());
    KFLEET_GPU_CHECK(gpuEventRecord(stop_, nullptr));
    l.t_return = tracer ? tracer->now() : 0;
    device_sync_bounded(o.idle_timeout_s, [&] {
      const std::string why = "the device did not go idle within " +
                              JsonLine::number(o.idle_timeout_s) +
                              " s after the launch returned: a persistent kernel or work left "
                              "running past the stop event";
      JsonLine("bench").str("case", case_name).boolean("suspect", true)
          .str("suspect_reason", why).print();
    });
    l.t1 = tracer ? tracer->now() : 0;
    set_phase("setup");
    inputs_read_only(false);
    float ms = 0;
    KFLEET_GPU_CHECK(gpuEventElapsedTime(&ms, start_, stop_));
    l.event_us = 1000.0 * ms;
    return l;
  }

  // The harness's own empty kernel, timed like a launch (calibrates the cross-check bound).
  Launch time_noop(const ActivityTracer* tracer) {
    Launch l;
    l.t0 = tracer->now();
    KFLEET_GPU_CHECK(gpuEventRecord(start_, nullptr));
    harness_noop<<<1, 1, 0, nullptr>>>();
    KFLEET_GPU_CHECK(gpuGetLastError());
    KFLEET_GPU_CHECK(gpuEventRecord(stop_, nullptr));
    l.t_return = tracer->now();
    KFLEET_GPU_CHECK(gpuDeviceSynchronize());
    l.t1 = tracer->now();
    float ms = 0;
    KFLEET_GPU_CHECK(gpuEventElapsedTime(&ms, start_, stop_));
    l.event_us = 1000.0 * ms;
    return l;
  }

  bool read_only() const { return read_only_; }

 private:
  gpuEvent_t start_{}, stop_{};
  bool read_only_ = false;
};

SampleTiming judge(ActivityTracer& tracer, const Launch& l, const CrossCheckBound& bound) {
  std::vector<ActivityRecord> between, in_window;
  split_at(tracer.flush(), l.t0, &between, &in_window);
  return judge_sample(in_window, between, tracer.harness_stream_id(),
                      SampleWindow{l.t0, l.t_return, l.t1, l.event_us}, bound);
}

}  // namespace

int run_benchmark(const Options& o, const DeviceInfo& dev) {
  auto problem = make_problem(o, o.seeds.front());
  // Warm-up runs on refreshed inputs too, so that one set of args (scales of refreshed inputs)
  // serves every launch: in replay mode that is the one recording the benchmark has.
  problem->refresh_inputs(0);
  KFLEET_GPU_CHECK(gpuDeviceSynchronize());
  if (!o.replay_path.empty()) attach_replay(o, *problem, recording_name(o.stage, 0));
  // Timing that sees all the work, or a result that says it could not.
  std::string no_tracer;
  ActivityTracer* tracer = ActivityTracer::start(&no_tracer);
  EventTimer timer;
  int status = KFLEET_OK;
  auto declined = [&] {
    JsonLine("bench").str("case", o.case_name).boolean("unsupported", true)
        .str("no_result", "declined")
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
    const Launch l = timer.time_launch(*problem, tracer, o, o.case_name);
    status = l.status;
    if (status != KFLEET_OK) return declined();
    warm_last_us = l.event_us;
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
  std::vector<double> samples, clocks, event_samples;
  std::size_t timed_runs = 0, checked_runs = 0, random_checks = 0, structural = 0, disagreements = 0,
              records = 0;
  std::size_t max_streams = 0;
  std::string stop_reason, recheck_reason, structural_reason, disagreement_reason;
  float recheck_max_abs = 0;
  // Fresh inputs: a nonce no kernel can know in advance; the re-check draw comes from the OS
  // after each sample has run.
  std::random_device os_random;
  const std::uint64_t nonce = (std::uint64_t(os_random()) << 32) ^ os_random();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  RecheckPolicy policy;
  double run_wall_s = 0;  // timed runs with their refresh, re-checks excluded: calibrates policy
  double cheapest_recheck_s = 1e30;
  double overhead_s = 0, refresh_s = 0, recheck_s = 0;
  gpuStream_t hs = harness_stream();
  // What tracing adds to a launch on this host: the harness's own empty kernel through the same
  // path; the events-minus-span it shows widens the cross-check bound (PROTOCOL.md).
  CrossCheckBound bound;
  std::vector<double> gaps, idle_us;
  if (tracer) {
    tracer->flush();  // warm-up's records are not samples
    for (int i = 0; i < 9; ++i) {
      KFLEET_GPU_CHECK(gpuDeviceSynchronize());
      const Launch l = timer.time_noop(tracer);
      const SampleTiming t = judge(*tracer, l, bound);
      gaps.push_back(std::max(0.0, l.event_us - t.span_us));
    }
    bound.launch_overhead_us = quantile(gaps, 0.5);
  }
  take_timer_stamps();  // the warm-up's stamps are outside the sampling window
  const auto sample_start = std::chrono::steady_clock::now();
  while (stop_reason.empty()) {
    // Outside the window: new input content, cold L2, poisoned output, an idle device.
    const auto prep = std::chrono::steady_clock::now();
    problem->refresh_inputs(sample_input_seed(nonce, timed_runs));
    if (flush_bytes)
      KFLEET_GPU_CHECK(gpuMemsetAsync(flush.get(), static_cast<int>(timed_runs & 0xFF), flush_bytes, hs));
    KFLEET_GPU_CHECK(gpuMemsetAsync(problem->output().get(), 0xFF, problem->output().bytes(), hs));
    KFLEET_GPU_CHECK(gpuDeviceSynchronize());
    const double prep_s = seconds_since(prep);
    refresh_s += prep_s;

    const Launch l = timer.time_launch(*problem, tracer, o, o.case_name);
    status = l.status;
    if (status != KFLEET_OK) return declined();
    const auto post = std::chrono::steady_clock::now();
    double us = l.event_us;
    if (tracer) {
      // One flush per sample, after it: what ended before t0 ran between samples.
      const SampleTiming t = judge(*tracer, l, bound);
      us = t.span_us > 0 ? t.span_us : l.event_us;
      records += t.records;
      idle_us.push_back(t.idle_us);
      max_streams = std::max(max_streams, t.streams);
      if (!t.suspect.empty()) {
        std::string& first = t.structural ? structural_reason : disagreement_reason;
        (t.structural ? structural : disagreements) += 1;
        if (first.empty()) first = "timed run " + std::to_string(timed_runs) + ": " + t.suspect;
      }
    }
    const double clock = measure_sm_clock_mhz();
    const bool slowed = throttle.throttled(clock);
    if (!slowed) {
      samples.push_back(us);
      event_samples.push_back(l.event_us);
      clocks.push_back(clock);
    }
    // The re-check draw, made now that the sample has run: the kernel cannot know it.
    double this_recheck_s = 0;
    if (policy.checked(timed_runs, uniform(os_random))) {
      const auto rc = std::chrono::steady_clock::now();
      ++checked_runs;
      if (timed_runs >= policy.always_first) ++random_checks;
      const std::string run = "timed run " + std::to_string(timed_runs) + ": ";
      const std::string changed = problem->inputs_changed_since_refresh();
      if (!changed.empty() && recheck_reason.empty()) recheck_reason = run + changed;
      problem->compute_reference(true);
      const DeviceCheck c = check_on_device(problem->output().get(), problem->out_dtype(),
                                            problem->reference_device(), problem->out_elements(),
                                            atol, rtol);
      problem->scrub_reference();
      recheck_max_abs = std::max(recheck_max_abs, c.max_abs);
      if (recheck_reason.empty()) {
        if (c.unwritten) recheck_reason = run + std::to_string(c.unwritten) + " elements never written";
        else if (c.nan || c.inf) recheck_reason = run + "output has NaN/Inf";
        else if (atol > 0 || rtol > 0 ? c.violations != 0 : false)
          recheck_reason = run + std::to_string(c.violations) + " elements outside atol/rtol";
        else if (o.tolerance.max_abs >= 0 && c.max_abs > o.tolerance.max_abs)
          recheck_reason = run + "max_abs " + std::to_string(c.max_abs) + " over the bound";
        if (!recheck_reason.empty())
          recheck_reason += " (on fresh inputs the kernel had not seen before: a cached or "
                            "precomputed answer?)";
      }
      this_recheck_s = seconds_since(rc);
      recheck_s += this_recheck_s;
      cheapest_recheck_s = std::min(cheapest_recheck_s, this_recheck_s);
    }
    overhead_s += prep_s + seconds_since(post);
    run_wall_s += seconds_since(prep) - this_recheck_s;
    ++timed_runs;
    if (timed_runs == policy.always_first) {
      // The most runs the bounds allow: max_samples, and max_time over the mean sample so far.
      const double mean_sample_s = (seconds_since(sample_start) - overhead_s) / timed_runs;
      const double by_time = mean_sample_s > 0 ? o.stop.max_time_s / mean_sample_s : 1e12;
      policy.calibrate(run_wall_s / timed_runs, cheapest_recheck_s,
                       std::min(static_cast<double>(o.stop.max_samples), by_time));
    }
    // The sampling budget counts the timed launches, not the refresh and re-check around them,
    // so the integrity work never costs samples.
    const double sampling_s = seconds_since(sample_start) - overhead_s;
    // Quiet samples alone do not end sampling before enough random re-checks (RecheckPolicy).
    stop_reason = guarded_stop(slowed ? rule.time_up(sampling_s) : rule.add(us, sampling_s), rule,
                               sampling_s, policy, random_checks);
    if (!recheck_reason.empty() && timed_runs >= 3) stop_reason = "recheck_failed";
  }
  // Replay probe: the last sample's inputs again, three times (outside the samples). A kernel
  // that keeps results across launches (a content-keyed cache, on the device or the host) is
  // much faster on inputs it has seen; an honest one takes the same time.
  std::vector<double> replay;
  if (recheck_reason.empty() && timed_runs > 0) {
    const auto rp = std::chrono::steady_clock::now();
    for (int r = 0; r < 3; ++r) {
      problem->refresh_inputs(sample_input_seed(nonce, timed_runs - 1));
      if (flush_bytes)
        KFLEET_GPU_CHECK(gpuMemsetAsync(flush.get(), r, flush_bytes, hs));
      KFLEET_GPU_CHECK(gpuMemsetAsync(problem->output().get(), 0xFF, problem->output().bytes(), hs));
      KFLEET_GPU_CHECK(gpuDeviceSynchronize());
      const Launch l = timer.time_launch(*problem, tracer, o, o.case_name);
      double us = l.event_us;
      if (tracer) {
        const SampleTiming t = judge(*tracer, l, bound);
        if (t.span_us > 0) us = t.span_us;
      }
      replay.push_back(us);
    }
    overhead_s += seconds_since(rp);
  }
  // Durations in the host's clock: the GPU's timer may run fast or slow (timer_rate.hpp).
  const TimerRate timer_rate_seen = timer_rate(take_timer_stamps());
  for (auto* v : {&samples, &event_samples, &replay})
    for (double& us : *v) us *= timer_rate_seen.scale;
  const double replay_median = quantile(replay, 0.5);
  if (samples.empty()) {
    // No sample survived the throttle filter. A failed re-check is still the kernel's and is
    // said first; otherwise the cause is the GPU's, named so that the agent times it again.
    JsonLine("bench").str("case", o.case_name).boolean("unsupported", true)
        .str("no_result", recheck_reason.empty() ? "gpu_throttled" : "recheck_failed")
        .str("reason", "every sample ran with the SM clock over " + std::to_string(o.throttle_pct) +
                           " % below its best (" + std::to_string(throttle.reference_mhz()) +
                           " MHz): the GPU is throttled; let it cool or pass --throttle-pct 0")
        .integer("throttled_discarded", (long long)throttle.discarded())
        .raw("recheck", JsonLine("recheck").boolean("pass", recheck_reason.empty())
                            .integer("checked_runs", (long long)checked_runs)
                            .str("reason", recheck_reason).text())
        .print();
    return 1;
  }

  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double s : samples) mean += s / samples.size();
  double var = 0;
  for (double s : samples) var += (s - mean) * (s - mean);
  const double stdev = samples.size() > 1 ? std::sqrt(var / (samples.size() - 1)) : 0;
  const double median = quantile(samples, 0.5);
  const Peaks peaks = device_peaks(dev.arch, dev.sm_count, dev.sm_clock_mhz, dev.peak_bw_gbs,
                                   problem->fp8_operands);
  const FloorJudgement floor = judge_floor(median, problem->flops, problem->bytes, peaks);
  // Suspect: a structural sign (work outside every launch, none recorded) or the span and the
  // events disagreeing, in at least a tenth of the samples and at least 2 (one hiccup of the
  // host or of the clock conversion is not a trick; a trick shows in every sample), or the
  // median above 95 % of a peak, or a replay of seen inputs much faster than fresh ones.
  std::string suspect_reason;
  const std::size_t enough = std::max<std::size_t>(2, timed_runs / 10);
  if (structural >= enough)
    suspect_reason = structural_reason + " (" + std::to_string(structural) + " of " +
                     std::to_string(timed_runs) + " samples)";
  else if (disagreements >= enough)
    suspect_reason = disagreement_reason + " (" + std::to_string(disagreements) + " of " +
                     std::to_string(timed_runs) + " samples)";
  else if (!floor.suspect.empty()) suspect_reason = floor.suspect;
  else if (replay_median < kReplayFraction * median)
    suspect_reason = "the kernel took " + JsonLine::number(replay_median) +
                     " us on inputs it had already seen but " + JsonLine::number(median) +
                     " us on fresh ones: it keeps results across launches (a content-keyed cache)";
  const bool suspect = !suspect_reason.empty();
  JsonLine("bench")
      .str("case", o.case_name)
      .integer("seed", (long long)o.seeds.front())
      .integer("n", (long long)samples.size())
      .num("median_us", median).num("mean_us", mean).num("stdev_us", stdev)
      .num("min_us", sorted.front()).num("max_us", sorted.back())
      .num("p10_us", quantile(samples, 0.1)).num("p90_us", quantile(samples, 0.9))
      .num("rel_stdev_pct", mean > 0 ? 100 * stdev / mean : 0)
      .str("stop_reason", stop_reason)
      .integer("throttled_discarded", (long long)throttle.discarded())
      .num("clock_reference_mhz", throttle.reference_mhz())
      .integer("l2_flush_bytes", (long long)flush_bytes)
      .nums("samples_us", samples).nums("sm_clock_mhz", clocks)
      .num("gpu_timer_ppm", timer_rate_seen.ppm).num("timer_scale", timer_rate_seen.scale)
      .str("timer_note", timer_rate_seen.note)
      .str("timing", tracer ? "activity" : "events_only")
      .str("timing_note", tracer ? "first-to-last GPU activity of the launch on any stream (CUPTI, " +
                                       tracer->library() + "), cross-checked with events"
                                 : "LESS TRUSTWORTHY: events on the launch stream only; " + no_tracer)
      .num("event_median_us", quantile(event_samples, 0.5))
      .nums("replay_us", replay)
      .integer("activity_records", (long long)records)
      .integer("max_streams", (long long)max_streams)
      .integer("timing_disagreements", (long long)disagreements)
      .num("launch_overhead_us", bound.launch_overhead_us)
      .boolean("inputs_read_only", timer.read_only())
      .num("idle_median_us", quantile(idle_us, 0.5))
      .integer("structural_flags", (long long)structural)
      .raw("inputs", JsonLine("inputs").str("policy", "fresh content per timed run")
                         .integer("sets", (long long)timed_runs)
                         .str("nonce", std::to_string(nonce)).text())
      .num("overhead_s", overhead_s).num("refresh_s", refresh_s).num("recheck_s", recheck_s)
      .num("sampling_s", seconds_since(sample_start) - overhead_s)
      .num("flops", problem->flops).num("bytes", problem->bytes)
      .num("tflops", problem->flops / (median * 1e6)).num("gbs", problem->bytes / (median * 1e3))
      .num("peak_tflops", peaks.tflops).str("peak_tflops_basis", peaks.tflops_basis)
      .num("peak_gbs", peaks.gbs)
      .num("tflops_frac", floor.tflops_frac).num("gbs_frac", floor.gbs_frac)
      .num("roofline_floor_us", floor.floor_us)
      .boolean("suspect", suspect)
      .str("suspect_reason", suspect_reason)
      .raw("recheck", JsonLine("recheck").boolean("pass", recheck_reason.empty())
                          .integer("checked_runs", (long long)checked_runs)
                          .integer("random_checks", (long long)random_checks)
                          .integer("min_random_checks", (long long)policy.min_random_checks)
                          .integer("timed_runs", (long long)timed_runs)
                          .num("p", policy.p).integer("always_first", (long long)policy.always_first)
                          .num("p_max", policy.p_max).num("p_min", policy.p_min)
                          .num("max_abs", recheck_max_abs).str("reason", recheck_reason)
                          .text())
      .print();
  return recheck_reason.empty() && !suspect ? 0 : 1;
}

}  // namespace kfleet::harness
