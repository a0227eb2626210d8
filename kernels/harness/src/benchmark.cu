// The benchmark stage (PROTOCOL.md): warm-up until timings stop improving, then cold samples on
// fresh inputs (new content generated on the device before each sample, output poisoned, then
// the L2 flushed, all outside the timed window). A sample is the span of every GPU activity the launch
// caused, on any stream (CUPTI), cross-checked with events around the launch and the host clock;
// a random subset of samples, drawn after each has run, is re-checked against a reference for
// its own inputs; the median is held to the dense tensor and bandwidth peaks.
//
// Laid out as the protocol reads (as NVBench's measure_cold is): ColdBenchmark's operator() is
// initialize, warm_up, start_trials, calibrate_cross_check, run_trials (each trial: refresh,
// timed launch, judge, re-check draw, stop rule), replay_probe, summarize; ColdTimer
// (cold_timer.hpp) owns what happens around the timed window (fresh inputs, the L2 flush, the
// poison, the syncs).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>

#include "cold_timer.hpp"
#include "harness.hpp"
#include "replay_mode.hpp"
#include "../cpu/bench_summary.hpp"
#include "../cpu/throttle_filter.hpp"
#include "../cpu/warmup_rule.hpp"

namespace kfleet::harness {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// What the timed runs saw, for the bench line.
struct TrialLog {
  std::vector<double> samples, clocks, event_samples, idle_us;  // samples: not throttled
  std::size_t timed_runs = 0, records = 0, max_streams = 0;
  WindowActivityLog window;  // what ran inside the windows, per stream and kind
  // Suspect samples: structural signs, and the span and the events disagreeing; the first of
  // each kind is named.
  std::size_t structural = 0, disagreements = 0;
  std::string structural_reason, disagreement_reason;
  std::string stop_reason;
};

// The random re-checks (PROTOCOL.md): which runs were checked and the first failure.
struct RecheckLog {
  RecheckPolicy policy;
  std::size_t checked_runs = 0, random_checks = 0;
  float max_abs = 0;
  std::string reason;
};

// Where the stage's wall time went. The sampling budget counts the timed launches only, not the
// refresh and re-check around them, so the integrity work never costs samples.
struct WallTime {
  Clock::time_point sample_start;
  double overhead_s = 0, refresh_s = 0, recheck_s = 0;
  double run_wall_s = 0;  // timed runs with their refresh, re-checks excluded: calibrates policy
  double cheapest_recheck_s = 1e30;
  double sampling_s() const { return seconds_since(sample_start) - overhead_s; }
};

class ColdBenchmark {
 public:
  ColdBenchmark(const Options& o, const DeviceInfo& dev)
      : o_(o), dev_(dev), throttle_(o.throttle_pct), rule_(o.stop) {}

  int operator()() {
    initialize();
    if (!o_.replay_bare_trigger.empty()) {  // --replay-bare-trigger: before and after, then done
      bare_runs("before_trigger");
      if (o_.replay_bare_trigger != "noop-legacy-pregraph") replay_bare_trigger(o_.replay_bare_trigger);
      bare_runs(("after_" + o_.replay_bare_trigger).c_str());
      return 0;
    }
    bare_runs("before_warmup");
    if (!warm_up()) return declined();
    bare_runs("after_warmup");
    // With the sample loop's steps one at a time, each added to every launch, in this order.
    bare_runs("with_tracer_flush", kBareTracerFlush);
    bare_runs("with_clock_probe", kBareClockProbe);
    bare_runs("with_poison", kBarePoison);
    bare_runs("with_malloc_free", kBareMallocFree);
    bare_runs("with_refresh", kBareRefresh);
    bare_runs("with_refresh_same", kBareRefresh | kBareSameSeed);  // the same bytes rewritten
    bare_runs("with_refresh_seed1", kBareRefresh | kBareSeedOne);  // other bytes, the same each time
    bare_runs("kernel_flush", kBareKernelFlush);
    start_trials();
    bare_runs("after_arm_flush");
    calibrate_cross_check();
    bare_runs("after_calibrate");
    if (tracer_ && o_.kernel_configs) tracer_->count_kernel_configs();
    if (!run_trials()) return declined();
    bare_runs("after_trials");
    if (tracer_ && o_.kernel_configs)  // before replay_probe's launches (a diagnostic line)
      JsonLine("kernel_configs").str("case", o_.case_name).raw("kernels", tracer_->kernel_configs_json()).print();
    replay_probe();
    scale_to_host_clock();
    if (log_.samples.empty()) return no_result();
    return summarize();
  }

 private:
  // The problem at the first seed on refreshed inputs: warm-up runs on refreshed inputs too, so
  // that one set of args (scales of refreshed inputs) serves every launch: in replay mode that
  // is the one recording the benchmark has. Then timing that sees all the work, or a result
  // that says it could not.
  void initialize() {
    problem_ = make_problem(o_, o_.seeds.front());
    problem_->refresh_inputs(0);
    KFLEET_GPU_CHECK(gpuDeviceSynchronize());
    // CUPTI traces kernels from before the replay's graph is made, as the in-process yardstick
    // and bench/gpu/graph_edge_gap.cu enable it before their graphs. The order changes no time (an
    // H100, 2026-12-05: the compiled softmax 49.20 against 49.19 us, the same gaps), but CUPTI's
    // records give the graph's kernels the carve-out they ran with only when it was on before the
    // graph was made (0 otherwise; a stream's kernels read 0 in this order), so --kernel-configs
    // compares a graph's kernels with in-process's.
    // --replay-graph-before-tracer keeps the old order (a diagnostic).
    if (o_.replay_bare_trigger == "noop-legacy-pregraph") replay_bare_trigger("noop-legacy");
    const bool graph_first = o_.replay_graph_before_tracer;
    if (!graph_first) tracer_ = ActivityTracer::start(&no_tracer_);
    if (!o_.replay_path.empty()) attach_replay(o_, *problem_, recording_name(o_.stage, 0));
    if (graph_first) tracer_ = ActivityTracer::start(&no_tracer_);
    timer_ = std::make_unique<ColdTimer>(o_, tracer_);
  }

  // --replay-bare N (a diagnostic, replay_bare.cu): the replay timed without the sample loop.
  void bare_runs(const char* when, unsigned with = 0) {
    if (o_.replay_bare > 0 && tracer_)
      replay_bare_runs(o_, std::max<std::size_t>(2 * dev_.l2_bytes, kMinFlushBytes), *problem_, *tracer_, when, with);
  }

  // Warm-up: untimed in spirit (its times only show when they have settled). The clock the GPU
  // settles at while busy with this kernel is the reference the throttle filter compares
  // samples with (throttle_filter.hpp). False when the kernel declined the case.
  bool warm_up() {
    const auto warm_start = Clock::now();
    WarmupRule warm({std::min(o_.warmup_min_s, o_.warmup_max_s), o_.warmup_max_s});
    std::string warm_end;
    double warm_last_us = NAN;
    while (warm_end.empty() && o_.warmup_max_s > 0) {
      const Launch l = timer_->time(*problem_);
      status_ = l.status;
      if (status_ != KFLEET_OK) return false;
      warm_last_us = l.event_us;
      throttle_.observe(measure_sm_clock_mhz());
      warm_end = warm.add(warm_last_us, seconds_since(warm_start));
    }
    throttle_.settle();  // the clock the GPU holds running this kernel: the filter's reference
    JsonLine("warmup").integer("launches", (long long)warm.launches())
        .num("seconds", seconds_since(warm_start)).num("last_us", warm_last_us)
        .num("last_change_pct", warm.last_change_pct()).boolean("stable", warm_end == "stable")
        .num("clock_reference_mhz", throttle_.reference_mhz())
        .num("clock_best_mhz", throttle_.best_mhz()).print();
    return true;
  }

  // Before the first cold sample: the flush buffer, and the nonce of fresh inputs (a number no
  // kernel can know in advance; the re-check draws come from the OS after each sample has run).
  void start_trials() {
    timer_->arm_flush(dev_);
    nonce_ = (std::uint64_t(os_random_()) << 32) ^ os_random_();
  }

  // What tracing adds to a launch on this host: the harness's own empty kernel through the same
  // path; the events-minus-span it shows widens the cross-check bound (PROTOCOL.md).
  void calibrate_cross_check() {
    if (!tracer_) return;
    tracer_->flush();  // warm-up's records are not samples
    std::vector<double> gaps;
    for (int i = 0; i < 9; ++i) {
      KFLEET_GPU_CHECK(gpuDeviceSynchronize());
      const Launch l = timer_->time_noop(*problem_);
      const SampleTiming t = judge(l);
      gaps.push_back(std::max(0.0, l.event_us - t.span_us));
    }
    bound_.launch_overhead_us = quantile(gaps, 0.5);
  }

  // Timed runs until the stop rule (or a failed re-check) ends them. False when the kernel
  // declined the case.
  bool run_trials() {
    take_timer_stamps();  // the warm-up's stamps are outside the sampling window
    wall_.sample_start = Clock::now();
    while (log_.stop_reason.empty())
      if (!run_trial()) return false;
    return true;
  }

  // One timed run: refresh, timed launch, judge, re-check draw, then the stop rule.
  bool run_trial() {
    const auto prep = Clock::now();
    // --same-inputs (a diagnostic): the plan's draw each sample; else a draw no kernel can know
    const int flush_value = static_cast<int>(log_.timed_runs & 0xFF);
    if (o_.same_inputs.empty())
      timer_->prepare(*problem_, sample_input_seed(nonce_, log_.timed_runs), flush_value);
    else
      timer_->prepare_same(*problem_, o_.same_inputs, flush_value);
    const double prep_s = seconds_since(prep);
    wall_.refresh_s += prep_s;

    const Launch l = timer_->time(*problem_);
    status_ = l.status;
    if (status_ != KFLEET_OK) return false;
    const auto post = Clock::now();
    const double us = judge_trial(l);
    const bool slowed = keep_unless_throttled(us, l.event_us);
    const double recheck_s = recheck_draw();
    wall_.overhead_s += prep_s + seconds_since(post);
    wall_.run_wall_s += seconds_since(prep) - recheck_s;
    ++log_.timed_runs;
    log_.stop_reason = stop_rule(us, slowed);
    return true;
  }

  // The sample of a timed run: its activity span (events where there is no span or no tracer),
  // with the run's suspect signs counted.
  double judge_trial(const Launch& l) {
    if (!tracer_) return l.event_us;
    // One flush per sample, after it: what ended before t0 ran between samples.
    const SampleTiming t = judge(l);
    log_.records += t.records;
    log_.idle_us.push_back(t.idle_us);
    log_.max_streams = std::max(log_.max_streams, t.streams);
    log_.window.add(t);
    if (!t.suspect.empty()) {
      std::string& first = t.structural ? log_.structural_reason : log_.disagreement_reason;
      (t.structural ? log_.structural : log_.disagreements) += 1;
      if (first.empty()) first = "timed run " + std::to_string(log_.timed_runs) + ": " + t.suspect;
    }
    return t.span_us > 0 ? t.span_us : l.event_us;
  }

  SampleTiming judge(const Launch& l) {
    std::vector<ActivityRecord> between, in_window;
    split_at(tracer_->flush(), l.t0, tracer_->harness_stream_id(), &between, &in_window);
    return judge_sample(in_window, between, tracer_->harness_stream_id(),
                        SampleWindow{l.t0, l.t_return, l.t1, l.event_us}, bound_);
  }

  // A sample taken with the SM clock throttled is dropped (true); the others are kept.
  bool keep_unless_throttled(double us, double event_us) {
    const double clock = measure_sm_clock_mhz();
    const bool slowed = throttle_.throttled(clock);
    if (!slowed) {
      log_.samples.push_back(us);
      log_.event_samples.push_back(event_us);
      log_.clocks.push_back(clock);
    }
    return slowed;
  }

  // The re-check draw, made now that the sample has run: the kernel cannot know it. A drawn run
  // is checked against a reference for its own inputs; returns the seconds the check took.
  double recheck_draw() {
    RecheckLog& rc = rechecks_;
    const std::size_t run_index = log_.timed_runs;
    if (o_.replay_builtin_kernels) return 0;  // the diagnostic's empty kernels compute nothing
    if (!rc.policy.checked(run_index, uniform_(os_random_))) return 0;
    const auto start = Clock::now();
    ++rc.checked_runs;
    if (run_index >= rc.policy.always_first) ++rc.random_checks;
    const std::string run = "timed run " + std::to_string(run_index) + ": ";
    const std::string changed = problem_->inputs_changed_since_refresh();
    if (!changed.empty() && rc.reason.empty()) rc.reason = run + changed;
    float max_abs = 0;
    const std::string bad = problem_->recheck_outputs(o_, &max_abs);
    rc.max_abs = std::max(rc.max_abs, max_abs);
    if (rc.reason.empty() && !bad.empty())
      rc.reason = run + bad + " (on fresh inputs the kernel had not seen before: a cached or "
                              "precomputed answer?)";
    const double took = seconds_since(start);
    wall_.recheck_s += took;
    wall_.cheapest_recheck_s = std::min(wall_.cheapest_recheck_s, took);
    return took;
  }

  // After the run is counted: "" to go on, or why sampling ends. Once the first runs (always
  // re-checked) are in, the re-check rate is set from what a run and a re-check cost and the
  // most runs the bounds allow (max_samples, and max_time over the mean sample so far). Quiet
  // samples alone do not end sampling before enough random re-checks (RecheckPolicy).
  std::string stop_rule(double us, bool slowed) {
    RecheckPolicy& policy = rechecks_.policy;
    const std::size_t runs = log_.timed_runs;
    if (runs == policy.always_first) {
      const double mean_sample_s = wall_.sampling_s() / runs;
      const double by_time = mean_sample_s > 0 ? o_.stop.max_time_s / mean_sample_s : 1e12;
      policy.calibrate(wall_.run_wall_s / runs, wall_.cheapest_recheck_s,
                       std::min(static_cast<double>(o_.stop.max_samples), by_time));
    }
    const double sampling_s = wall_.sampling_s();
    std::string stop = guarded_stop(slowed ? rule_.time_up(sampling_s) : rule_.add(us, sampling_s),
                                    rule_, sampling_s, policy, rechecks_.random_checks);
    if (!rechecks_.reason.empty() && runs >= 3) stop = "recheck_failed";
    return stop;
  }

  // The replay probe: the last sample's inputs again, three times (outside the samples). A
  // kernel that keeps results across launches (a content-keyed cache, on the device or the
  // host) is much faster on inputs it has seen; an honest one takes the same time.
  void replay_probe() {
    if (!rechecks_.reason.empty() || log_.timed_runs == 0) return;
    const auto rp = Clock::now();
    for (int r = 0; r < 3; ++r) {
      timer_->prepare(*problem_, sample_input_seed(nonce_, log_.timed_runs - 1), r);
      const Launch l = timer_->time(*problem_);
      double us = l.event_us;
      if (tracer_) {
        const SampleTiming t = judge(l);
        if (t.span_us > 0) us = t.span_us;
      }
      replay_.push_back(us);
    }
    wall_.overhead_s += seconds_since(rp);
  }

  // Durations in the host's clock: the GPU's timer may run fast or slow (timer_rate.hpp). The
  // stamps are the trials' clock probes.
  void scale_to_host_clock() {
    timer_rate_ = timer_rate(take_timer_stamps());
    for (auto* v : {&log_.samples, &log_.event_samples, &replay_})
      for (double& us : *v) us *= timer_rate_.scale;
  }

  // The kernel returned a status other than KFLEET_OK: it declined this case.
  int declined() const {
    JsonLine("bench").str("case", o_.case_name).boolean("unsupported", true)
        .str("no_result", "declined")
        .str("reason", "kernel returned status " + std::to_string(status_) + " for this case")
        .print();
    return 1;
  }

  // No sample survived the throttle filter. A failed re-check is still the kernel's and is said
  // first; otherwise the cause is the GPU's, named so that the agent times it again.
  int no_result() const {
    const RecheckLog& rc = rechecks_;
    JsonLine("bench").str("case", o_.case_name).boolean("unsupported", true)
        .str("no_result", rc.reason.empty() ? "gpu_throttled" : "recheck_failed")
        .str("reason", "every sample ran with the SM clock over " + std::to_string(o_.throttle_pct) +
                           " % below the clock the GPU held while warming up on this kernel (" +
                           std::to_string(throttle_.reference_mhz()) +
                           " MHz): the GPU was slowed while sampling; let it cool or pass --throttle-pct 0")
        .integer("throttled_discarded", (long long)throttle_.discarded())
        .raw("recheck", JsonLine("recheck").boolean("pass", rc.reason.empty())
                            .integer("checked_runs", (long long)rc.checked_runs)
                            .str("reason", rc.reason).text())
        .print();
    return 1;
  }

  // The bench line: the samples' statistics, how they were timed, the honest floors, and the
  // verdict of the integrity checks. Exit status 1 when a re-check failed or the timing is
  // suspect.
  int summarize() const {
    const std::vector<double>& samples = log_.samples;
    const RecheckLog& rc = rechecks_;
    const std::size_t timed_runs = log_.timed_runs;
    const SampleStats st = sample_stats(samples);
    const double median = st.median;
    const Peaks peaks = device_peaks(dev_.arch, dev_.sm_count, dev_.sm_clock_mhz, dev_.peak_bw_gbs,
                                     problem_->fp8_operands);
    const FloorJudgement floor = judge_floor(median, problem_->flops, problem_->bytes, peaks);
    SuspectSigns signs;
    signs.timed_runs = timed_runs;
    signs.structural = log_.structural;
    signs.disagreements = log_.disagreements;
    signs.structural_reason = log_.structural_reason;
    signs.disagreement_reason = log_.disagreement_reason;
    signs.floor_suspect = floor.suspect;
    signs.replay_median = quantile(replay_, 0.5);
    signs.median = median;
    const std::string suspect_reason = harness::suspect_reason(signs);
    const bool suspect = !suspect_reason.empty();
    JsonLine("bench")
        .str("case", o_.case_name)
        .integer("seed", (long long)o_.seeds.front())
        .integer("n", (long long)samples.size())
        .num("median_us", median).num("mean_us", st.mean).num("stdev_us", st.stdev)
        .num("min_us", st.min).num("max_us", st.max)
        .num("p10_us", st.p10).num("p90_us", st.p90)
        .num("rel_stdev_pct", st.rel_stdev_pct)
        .str("stop_reason", log_.stop_reason)
        .integer("throttled_discarded", (long long)throttle_.discarded())
        .num("clock_reference_mhz", throttle_.reference_mhz())
        .num("clock_best_mhz", throttle_.best_mhz())
        .integer("l2_flush_bytes", (long long)timer_->flush_bytes())
        .nums("samples_us", samples).nums("sm_clock_mhz", log_.clocks)
        .num("gpu_timer_ppm", timer_rate_.ppm).num("timer_scale", timer_rate_.scale)
        .str("timer_note", timer_rate_.note)
        .str("timing", tracer_ ? "activity" : "events_only")
        .str("timing_note", tracer_ ? "first-to-last GPU activity of the launch on any stream (CUPTI, " +
                                          tracer_->library() + "), cross-checked with events"
                                    : "LESS TRUSTWORTHY: events on the launch stream only; " + no_tracer_)
        .num("event_median_us", quantile(log_.event_samples, 0.5))
        .nums("replay_us", replay_)
        .integer("activity_records", (long long)log_.records)
        .integer("max_streams", (long long)log_.max_streams)
        .raw("window_activity", log_.window.json())
        .num("lead_median_us", log_.window.lead_median_us())
        .nums("edge_gaps_us", log_.window.gap_medians_us())
        .integer("timing_disagreements", (long long)log_.disagreements)
        .num("launch_overhead_us", bound_.launch_overhead_us)
        .boolean("inputs_read_only", timer_->read_only())
        .num("idle_median_us", quantile(log_.idle_us, 0.5))
        .integer("structural_flags", (long long)log_.structural)
        .raw("inputs", JsonLine("inputs")
                           .str("policy", o_.same_inputs.empty() ? "fresh content per timed run"
                                                                 : "the plan's draw, --same-inputs " + o_.same_inputs)
                           .integer("sets", o_.same_inputs.empty() ? (long long)timed_runs : 1)
                           .str("nonce", std::to_string(nonce_)).text())
        .num("overhead_s", wall_.overhead_s).num("refresh_s", wall_.refresh_s)
        .num("recheck_s", wall_.recheck_s)
        .num("sampling_s", wall_.sampling_s())
        .num("flops", problem_->flops).num("bytes", problem_->bytes)
        .num("tflops", problem_->flops / (median * 1e6)).num("gbs", problem_->bytes / (median * 1e3))
        .num("peak_tflops", peaks.tflops).str("peak_tflops_basis", peaks.tflops_basis)
        .num("peak_gbs", peaks.gbs)
        .num("tflops_frac", floor.tflops_frac).num("gbs_frac", floor.gbs_frac)
        .num("roofline_floor_us", floor.floor_us)
        .boolean("suspect", suspect)
        .str("suspect_reason", suspect_reason)
        .raw("recheck", JsonLine("recheck").boolean("pass", rc.reason.empty())
                            .integer("checked_runs", (long long)rc.checked_runs)
                            .integer("random_checks", (long long)rc.random_checks)
                            .integer("min_random_checks", (long long)rc.policy.min_random_checks)
                            .integer("timed_runs", (long long)timed_runs)
                            .num("p", rc.policy.p).integer("always_first", (long long)rc.policy.always_first)
                            .num("p_max", rc.policy.p_max).num("p_min", rc.policy.p_min)
                            .num("max_abs", rc.max_abs).str("reason", rc.reason)
                            .text())
        .print();
    return rc.reason.empty() && !suspect ? 0 : 1;
  }

  const Options& o_;
  const DeviceInfo& dev_;
  std::unique_ptr<Problem> problem_;
  ActivityTracer* tracer_ = nullptr;
  std::string no_tracer_;  // why there is no tracer
  std::unique_ptr<ColdTimer> timer_;
  int status_ = KFLEET_OK;  // the kernel's last status
  ThrottleFilter throttle_;
  StopRule rule_;
  CrossCheckBound bound_;
  std::random_device os_random_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  std::uint64_t nonce_ = 0;
  TrialLog log_;
  RecheckLog rechecks_;
  WallTime wall_;
  std::vector<double> replay_;  // the replay probe's samples
  TimerRate timer_rate_;        // the GPU timer against the host clock over the trials
};

}  // namespace

int run_benchmark(const Options& o, const DeviceInfo& dev) { return ColdBenchmark(o, dev)(); }

}  // namespace kfleet::harness
