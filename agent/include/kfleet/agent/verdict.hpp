#pragma once
// How a run's stage results become its verdict, for every backend: gate failures reject,
// infrastructure failures are errors, and the benchmark's comparison decides performance
// (seed 000: "rejected: performance, do not merge: +6.1% (696 µs vs 656 µs)").
#include <optional>
#include <string>

#include "kfleet/agent/backend.hpp"
#include "kfleet/common/model.hpp"

namespace kfleet::agent {

// "696 µs", "38.2 µs", "4.27 µs": precision that suits the size.
std::string format_us(double us);
// "+6.1%", "-0.4%"
std::string format_pct(double pct);

// A failed stage's verdict: infra_error -> error; resources / correctness -> rejected at that
// gate; benchmark -> rejected at the `integrity` gate (a suspect timing, a failed re-check on
// fresh inputs, a crash or hang while timed); build -> error "build failed: ...". Never called
// with an ok result. An error's reason ends by naming the job's side as the one that failed
// (metrics.failed_side = "job"): the fleet's failures never become verdicts.
Verdict verdict_for_failed_stage(const std::string& stage, const StageResult& r);

// The verdict after a successful benchmark, from the bench.result fields (median_us and, when a
// comparison was made, perf, delta_pct, ci_low_pct, ci_high_pct, baseline_us, threshold_pct).
// A problem's kernel's `versus` (its comparisons with kfleet's PyTorch references) becomes the
// verdict's, and the reason's last line (kfleet::versus_line).
Verdict verdict_from_benchmark(const nlohmann::json& bench);

}  // namespace kfleet::agent
