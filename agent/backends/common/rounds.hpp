#pragma once
// Interleaved A/B rounds (MEASUREMENT.md point 7) and pooled multi-process benchmarks: the
// sequencing and statistics shared by the harness backends and the simulated GPU, so tests of
// the simulator exercise the same decisions a real GPU run makes.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/agent/backend.hpp"

namespace kfleet::backends {

// One timed process: an interleaved round's baseline or candidate, or one pooled process.
struct TimedRun {
  bool ok = false;
  bool infra_error = false;
  std::string reason;
  // A named cause of a failure that is the fleet's and may pass on another try (kGpuThrottled:
  // every sample of the process was discarded as throttled); "" otherwise.
  std::string cause;
  std::vector<double> samples_us;
  nlohmann::json fields = nlohmann::json::object();  // the harness's other bench fields
};
// Times the baseline (true) or the candidate (false); index counts that side's processes.
using TimeOnce = std::function<TimedRun(bool baseline, int index)>;

// A process whose failure is the fleet's (TimedRun::cause) is timed again, at most this many
// more times, before the stage fails as the fleet's (infra), never as a result without samples.
inline constexpr int kFleetRetries = 2;

struct RoundPlan {
  int min_rounds = 5;        // before the first decision: fewer rounds give a CI that is noise
  int max_rounds = 30;       // then `inconclusive`
  double threshold_pct = 1.0;
};

// Runs baseline, candidate, baseline, candidate, ..., baseline and judges the per-round ratio
// candidate / mean(baseline before, baseline after) with stats::compare_rounds, stopping once
// decisive (after min_rounds) or at max_rounds. Fills bench.result fields for the candidate
// (pooled samples), the verdict fields, and interleaved/rounds/round_ratios. A failing
// candidate fails the stage with its reason; a failing baseline is an infra error.
agent::StageResult run_rounds(const RoundPlan& plan, const TimeOnce& time_once,
                              const agent::Comparison& cmp, const agent::StopFlag& stop,
                              agent::EventSink& sink);

// Runs `processes` candidate processes and pools their samples (each process settles into its
// own offset; pooling averages the offsets instead of letting one decide the median). Fills
// the summary fields plus processes and process_medians_us; no verdict fields.
// A process that failed for the fleet's cause is timed again (kFleetRetries), logged to `sink`
// when one is given.
agent::StageResult run_pooled(int processes, const TimeOnce& time_once,
                              const agent::StopFlag& stop, agent::EventSink* sink = nullptr);

// Fills the verdict fields (perf, delta_pct, ci_low_pct, ci_high_pct, baseline_us) from a
// stored comparison, when the lease carries one with samples or a value; leaves data alone
// otherwise. (Interleaved comparisons get theirs from run_rounds.)
void add_comparison(const agent::Comparison& cmp, const std::vector<double>& samples_us,
                    double threshold_pct, nlohmann::json& data);

// median_us, mean_us, stdev_us, min_us, max_us, p10_us, p90_us, rel_stdev_pct, n, samples_us.
void put_summary(const std::vector<double>& samples_us, nlohmann::json& data);

}  // namespace kfleet::backends
