#include "kfleet/agent/verdict.hpp"

#include <cmath>
#include <cstdio>

#include "kfleet/common/versus.hpp"

namespace kfleet::agent {

std::string format_us(double us) {
  char buf[64];
  if (std::fabs(us) >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f µs", us);
  } else if (std::fabs(us) >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f µs", us);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f µs", us);
  }
  return buf;
}

std::string format_pct(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", pct);
  return buf;
}

Verdict verdict_for_failed_stage(const std::string& stage, const StageResult& r) {
  Verdict v;
  std::string why = r.reason.empty() ? "no reason given" : r.reason;
  if (r.infra_error) {
    v.outcome = RunOutcome::error;
    v.reason = stage + ": " + why;
  } else if (r.data.is_object() && r.data.value("integrity", false)) {
    // Not the kernel's numbers at fault but the conditions they were taken under.
    v.outcome = RunOutcome::rejected;
    v.gate = "integrity";
    v.reason = why;
  } else if (stage == "resources" || stage == "correctness" || stage == "performance" ||
             (stage == "build" && r.data.is_object() && r.data.value("gate", std::string()) == "resources")) {
    // (A build the compiler refused for more LDS than the target has is the resources gate's.)
    v.outcome = RunOutcome::rejected;
    v.gate = stage == "build" ? "resources" : stage;
    v.reason = why;
  } else if (stage == "benchmark") {
    // The kernel's own doing while timed: a suspect timing, outputs that fail the re-check on
    // fresh inputs, a crash or a hang. Not the infrastructure's: the job is rejected.
    v.outcome = RunOutcome::rejected;
    v.gate = "integrity";
    v.reason = why;
  } else if (stage == "build") {
    v.outcome = RunOutcome::error;
    v.reason = "build failed: " + why;
  } else {
    v.outcome = RunOutcome::error;
    v.reason = stage + " failed: " + why;
  }
  if (v.outcome == RunOutcome::error) {
    // The fleet's passing failures never come here (they are retried, then the run is given
    // back). What does: the job's own, kfleetd refusing on purpose to hand over the sources,
    // and kfleet's GPU reference disagreeing with its fp64 CPU reference (retrying would not
    // change it), neither caused by the job. The reason says which side it was.
    const bool reference = r.data.is_object() && r.data.value("reference_fault", false);
    const bool fleet = stage == "fetch" || reference;
    v.reason += reference ? " [the fleet's failure: kfleet's GPU reference disagrees with its fp64 CPU "
                            "reference, so no kernel can be judged by it; the job was not rejected]"
                : fleet   ? " [the fleet's failure: kfleetd would not hand over the sources; the "
                            "job's code never ran]"
                          : " [the job's failure: the agent and kfleetd were working]";
    v.metrics["failed_side"] = fleet ? "fleet" : "job";
  }
  return v;
}

Verdict verdict_from_benchmark_numbers(const nlohmann::json& bench);

namespace {

std::optional<double> num(const nlohmann::json& j, const char* k) {
  if (j.contains(k) && j[k].is_number()) return j[k].get<double>();
  return std::nullopt;
}

}  // namespace

Verdict verdict_from_benchmark(const nlohmann::json& bench) {
  Verdict v = verdict_from_benchmark_numbers(bench);
  if (bench.value("timing", std::string()) == "events_only") {
    // Never a silent fallback: a result timed without the activity tracer says so.
    v.reason += " [timing: events only, less trustworthy: " +
                bench.value("timing_note", std::string("no activity tracer")) + "]";
    v.metrics["timing"] = "events_only";
  }
  if (const std::string mode = bench.value("timing_mode", std::string()); !mode.empty())
    v.metrics["timing_mode"] = mode;  // a stored baseline is compared only within its mode
  if (bench.value("timing_mode", std::string()) == "in_process") {
    // The job asked for the old single process: wherever the verdict is shown, it says so.
    v.reason += " [" + bench.value("timing_mode_note",
                                   std::string("in-process timing: the kernel's host code ran in "
                                               "the measuring process")) + "]";
    v.metrics["timing_mode"] = "in_process";
  }
  // A problem's kernel against kfleet's PyTorch references: the reason's last line says how it
  // compares ("0.93x eager [0.92, 0.94], 1.41x torch.compile [1.39, 1.43] (llama3_8b)").
  if (bench.contains("versus") && bench["versus"].is_array()) {
    for (const auto& c : bench["versus"])
      if (c.is_object()) v.versus.push_back(baseline_comparison_from_json(c));
    if (const std::string line = versus_line(v.versus); !line.empty()) v.reason += "\n" + line;
  }
  return v;
}

Verdict verdict_from_benchmark_numbers(const nlohmann::json& bench) {
  Verdict v;
  v.outcome = RunOutcome::passed;
  v.median_us = num(bench, "median_us");
  std::string perf = bench.contains("perf") && bench["perf"].is_string()
                         ? bench["perf"].get<std::string>()
                         : "";
  if (perf.empty() || !v.median_us) {
    const std::string note = bench.value("compare_note", std::string());
    v.reason = v.median_us ? "passed: median " + format_us(*v.median_us) + " (no baseline to compare" +
                                 (note.empty() ? "" : ": " + note) + ")"
                           : "passed";
    return v;
  }
  v.perf = perf;
  v.delta_pct = num(bench, "delta_pct");
  v.ci_low_pct = num(bench, "ci_low_pct");
  v.ci_high_pct = num(bench, "ci_high_pct");
  v.baseline_us = num(bench, "baseline_us");
  double delta = v.delta_pct.value_or(0);
  std::string numbers = format_pct(delta) + " (" + format_us(*v.median_us) + " vs " +
                        format_us(v.baseline_us.value_or(0)) + ")";
  if (bench.value("interleaved", false)) {
    // Say how the numbers were made: paired rounds are a stronger claim than stored samples.
    const int rounds = bench.value("rounds", 0);
    numbers += ", interleaved, " + std::to_string(rounds) + (rounds == 1 ? " round" : " rounds");
    v.metrics["interleaved"] = true;
    v.metrics["rounds"] = rounds;
  }
  // Each round's candidate against the reference around it, in %: an inconclusive verdict says
  // which rounds disagreed (one disturbed round, or a spread that more rounds would not settle).
  std::string per_round;
  if (bench.contains("round_ratios") && bench["round_ratios"].is_array()) {
    nlohmann::json deltas = nlohmann::json::array();
    for (const auto& r : bench["round_ratios"]) {
      if (!r.is_number()) continue;
      const double d = std::round((r.get<double>() - 1.0) * 1e5) / 1e3;
      deltas.push_back(d);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%+.2f", d);
      per_round += (per_round.empty() ? "" : ", ") + std::string(buf);
    }
    v.metrics["round_deltas_pct"] = deltas;
  }
  std::string label = bench.value("baseline_label", std::string());
  if (!label.empty()) v.metrics["baseline_label"] = label;
  if (perf == "regressed") {
    v.outcome = RunOutcome::rejected;
    v.gate = "performance";
    v.reason = "do not merge: " + numbers;
  } else if (perf == "improved") {
    v.reason = "improved: " + numbers;
  } else if (perf == "same") {
    char thr[32];
    std::snprintf(thr, sizeof thr, "%g", bench.value("threshold_pct", 1.0));
    v.reason = std::string("same within ±") + thr + "%: " + numbers;
  } else {
    v.reason = "inconclusive: " + numbers + ", CI [" + format_pct(v.ci_low_pct.value_or(0)) +
               ", " + format_pct(v.ci_high_pct.value_or(0)) + "] straddles the threshold";
    if (!per_round.empty()) v.reason += "; rounds (%): " + per_round;
  }
  return v;
}

}  // namespace kfleet::agent
