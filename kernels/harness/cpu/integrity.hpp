#pragma once
// The rules that keep a kernel from faking its verdict (PROTOCOL.md, "What a sample is",
// "Fresh inputs", "Honest floors", "Gate strength"), as plain C++ so CI tests them on recorded
// data without a GPU. The GPU side (benchmark.cu, activity.cu) feeds them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cpu_reference.hpp"
#include "kfleet_harness/abi.h"
#include "metrics.hpp"
#include "stop_rule.hpp"

namespace kfleet::harness {

// ---- What a sample is: GPU activity records (CUPTI) against the events and the host clock ----

// One activity record as CUPTI reports it: a kernel, memcpy or memset, timestamps in ns on the
// same clock as the host timestamps below (cuptiGetTimestamp).
struct ActivityRecord {
  enum Kind { kernel_kind, memcpy_kind, memset_kind, other_kind } kind = kernel_kind;
  std::uint64_t start = 0, end = 0;
  std::uint32_t stream = 0;
};

// One timed sample as the host saw it: t0 just before the start event is recorded (the device
// idle, the activity buffers just flushed), t_return when the launch function returned, t1 when
// the device had gone idle again after the stop event.
struct SampleWindow {
  std::uint64_t t0 = 0, t_return = 0, t1 = 0;
  double event_us = 0;  // stop event - start event
};

// The bound within which the activity span and the event time must agree (PROTOCOL.md): the
// events include launch latency and the span does not, so a small absolute slack is allowed.
struct CrossCheckBound {
  double rel = 0.10;      // 10 % of the larger of the two
  double abs_us = 20.0;   // plus 20 µs
  double launch_overhead_us = 0;  // plus the events-minus-span of the harness's own empty
                                  // launch, measured on this host (tracing adds launch latency)
  double slack(double a, double b) const {
    return abs_us + launch_overhead_us + rel * (a > b ? a : b);
  }
};

// What ran inside a sample's window on one stream, of one kind: its records and busy time (the
// sum of their durations). The bench line reports these over all samples (window_activity), so
// a span that holds more than the launch's kernels shows what else it held.
struct WindowPart {
  ActivityRecord::Kind kind = ActivityRecord::kernel_kind;
  std::uint32_t stream = 0;
  std::size_t records = 0;
  double busy_us = 0;
};

const char* activity_kind_name(ActivityRecord::Kind k);

struct SampleTiming {
  double span_us = 0;          // first start to last end of everything the launch caused
  std::size_t records = 0;     // activity records inside the window
  std::size_t streams = 0;     // distinct streams they ran on
  double idle_us = 0;          // time inside the span when no recorded activity ran
  double lead_us = 0;          // first record's start - t0 (negative: it began before the sample)
  // Between each record and the one before it, in start order: its start minus that one's end
  // (negative where they overlap). Where a chain's span exceeds its kernels, these say where.
  std::vector<double> gaps_us;
  std::vector<WindowPart> parts;  // by stream, then kind, in that order
  std::string suspect;         // "" or why this sample cannot be trusted, naming the trick
  bool structural = false;     // work outside every launch / none recorded (vs a disagreement
                               // of span and events, or idle gaps, which one hiccup can cause)
};

// The bench line's window_activity: what ran inside the samples' windows, per stream and kind,
// over all samples (records, the samples that had any, the median and largest busy time in
// one), and the median lead of the first record over t0. It explains a span longer than the
// kernels (a copy, a second stream) without a profiler.
class WindowActivityLog {
 public:
  void add(const SampleTiming& t);
  std::string json() const;  // a JSON array
  double lead_median_us() const;
  // The median of each gap (SampleTiming::gaps_us) over the samples, by position; empty when
  // the samples had different numbers of records, or one record each.
  std::vector<double> gap_medians_us() const;

 private:
  struct Part {
    ActivityRecord::Kind kind;
    std::uint32_t stream;
    std::size_t records = 0;
    std::vector<double> busy_us;
  };
  std::vector<Part> parts_;
  std::vector<double> leads_;
  std::vector<std::vector<double>> gaps_;  // by position: every sample's gap there
  bool gaps_differ_ = false;
};

// The records flushed after a sample, split by the sample's start t0: those that ended before
// it (the harness's work between samples, or work left over from earlier launches) and the rest.
// Every record on `harness_stream` is between samples, whatever its timestamps: the harness
// synchronises the device after its own work and only then takes t0, and the launch never runs
// on that stream. CUPTI's conversion of GPU timestamps to the host clock drifts by microseconds,
// which can place the end of the harness's last kernel (warm_translations' page touch) after t0;
// a span taken from there would add the host's launch latency to the kernel (17 us on an H200).
void split_at(const std::vector<ActivityRecord>& all, std::uint64_t t0, std::uint32_t harness_stream,
              std::vector<ActivityRecord>* between, std::vector<ActivityRecord>* in_window);

// Judges one sample: `in_window` are the records flushed after t1 (everything that completed
// since t0), `between` those flushed just before t0 (the harness's own work between samples,
// which runs on `harness_stream`; anything else there ran outside every launch).
SampleTiming judge_sample(const std::vector<ActivityRecord>& in_window,
                          const std::vector<ActivityRecord>& between, std::uint32_t harness_stream,
                          const SampleWindow& w, const CrossCheckBound& bound = {});

// ---- Fresh inputs for every timed sample, and which samples are re-checked ----

// The seed of timed sample i's inputs: a nonce drawn when the run starts (never the same twice)
// mixed with the sample index, so no two samples, and no two runs, share input content.
std::uint64_t sample_input_seed(std::uint64_t run_nonce, std::uint64_t sample_index);

// Which timed samples are re-checked against a reference for their own inputs: the first
// `always_first` unconditionally, then each with probability p, drawn from `u` (uniform [0,1))
// AFTER the sample has run, so the kernel cannot know whether it is being checked.
//
// p starts at p_max. Once the always-checked runs have shown what a re-check costs next to a
// timed run (its refresh, flush and launch), calibrate() lowers p so that re-checking costs
// about as much wall time as the runs themselves, never below p_min: an 8192^3 GEMM, whose fp32
// reference takes hundreds of times longer than the kernel, is then re-checked on ~2 % of its
// runs rather than a quarter (which took minutes), and a small kernel keeps p_max. A kernel that
// answers wrongly on a fraction f of n runs escapes with probability (1 - p)^(f n). A kernel
// cannot lower p by being slow (that raises it); the cheapest of the first re-checks sets the
// cost, so start-up costs or work that slows one re-check do not lower it either.
//
// A lower p must not buy a kernel a window: one honest for the always-checked runs and wrong
// after them would, with few runs, face only a handful of draws. Two rules close it, whatever
// the stop reason:
//  - p never drops below what gives `min_random_checks` expected draws within the most runs the
//    bounds allow (max_samples, and max_time over the run's sample time): a run capped at 10
//    samples (an interleaved round) keeps p_max;
//  - the noise target may end sampling only after `min_random_checks` random re-checks
//    (guarded_stop), so quiet samples cannot end it early.
// Each random draw lands on a wrong run with probability f, so such a kernel escapes with about
// (1 - f)^12 (< 3e-4 for f = 1/2, which is what it takes to move a median).
struct RecheckPolicy {
  std::size_t always_first = 3;
  std::size_t min_random_checks = 12;
  double p_max = 0.25, p_min = 0.02;
  double cost_ratio = 1.0;  // re-check wall time allowed per unit of timed-run wall time
  double p = p_max;
  bool checked(std::size_t sample_index, double u) const {
    return sample_index < always_first || u < p;
  }
  // May the noise target end sampling after `random_checks` re-checks past the first runs?
  bool enough_random_checks(std::size_t random_checks) const { return random_checks >= min_random_checks; }
  // run_s: mean wall time of one timed run with its refresh (no re-check); recheck_s: wall time
  // of the cheapest re-check so far; max_runs: the most timed runs the stop rule's bounds allow.
  // Non-positive or non-finite times leave p as it is.
  void calibrate(double run_s, double recheck_s, double max_runs) {
    if (!(run_s > 0) || !(recheck_s > 0) || !(run_s < 1e9) || !(recheck_s < 1e9)) return;
    double want = cost_ratio * run_s / recheck_s;
    const double draws = max_runs - static_cast<double>(always_first);
    const double floor = draws > 0 ? static_cast<double>(min_random_checks) / draws : p_max;
    if (want < floor) want = floor;
    p = want < p_min ? p_min : want > p_max ? p_max : want;
  }
};

// The stop decision after a sample: the stop rule's, except that the noise target cannot end
// sampling before enough random re-checks (the hard bounds, max_time and max_samples, still do).
inline std::string guarded_stop(const std::string& rule_stop, const StopRule& rule, double sampling_s,
                                const RecheckPolicy& policy, std::size_t random_checks) {
  if (rule_stop == "noise_target" && !policy.enough_random_checks(random_checks)) return rule.limits(sampling_s);
  return rule_stop;
}

// ---- Honest floors: dense tensor-core peaks per dtype, and the memory bandwidth ----

// Dense (no sparsity) tensor-core flops per SM (CU) per clock for the fastest math the given
// operand dtypes allow on `arch` ("sm_90", "gfx942"): fp8 operands may use fp8 MMA, fp16/bf16
// the 16-bit rate. 0 for an unknown arch (no flops floor then).
double dense_flops_per_sm_clock(const std::string& arch, bool fp8_operands);

struct Peaks {
  double tflops = 0;   // dense tensor peak for the dtypes involved, at the attribute clock
  double gbs = 0;      // DRAM bandwidth from the memory clock and bus width
  std::string tflops_basis;  // "fp16 dense tensor" | "fp8 dense tensor"
};
Peaks device_peaks(const std::string& arch, int sm_count, double sm_clock_mhz,
                   double peak_bw_gbs, bool fp8_operands);

struct FloorJudgement {
  double floor_us = 0;           // max(bytes / bandwidth, flops / tensor peak)
  double tflops_frac = 0, gbs_frac = 0;  // achieved / peak at the median
  std::string suspect;           // "" or which peak the median would exceed
};
// Above `max_frac` (0.95) of a physical peak is not believed.
FloorJudgement judge_floor(double median_us, double flops, double bytes, const Peaks& p,
                           double max_frac = 0.95);

// ---- Gate strength: what a do-nothing output scores against the same reference ----

// The attention output that ignores Q and K: for each query row the mean of V over the keys it
// may see (all keys, or keys 0..i when causal). v: [B, H, S, D].
std::vector<float> mean_of_v_output(const AttentionShape& s, const std::vector<double>& v,
                                    bool causal);

struct DoNothing {
  std::string name;          // "all zeros", "mean of V"
  std::vector<float> output;
};

// "" when no do-nothing output passes `tol` against `reference`; else a refusal naming the
// output that passes, with its metrics. `scores` gets one entry per output either way. `terms`:
// each output's sum of |terms|, for tol.dot_rtol (allclose_violations).
std::string gate_strength_failure(const std::vector<double>& reference,
                                  const std::vector<DoNothing>& outputs, const Tolerance& tol,
                                  std::vector<std::pair<std::string, Metrics>>* scores = nullptr,
                                  const std::vector<double>* terms = nullptr);

}  // namespace kfleet::harness
