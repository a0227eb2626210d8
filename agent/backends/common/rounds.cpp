#include "common/rounds.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "kfleet/common/stats.hpp"

namespace kfleet::backends {

using agent::StageResult;

namespace {

StageResult failed(const TimedRun& t, const std::string& prefix, bool force_infra) {
  StageResult r;
  r.infra_error = force_infra || t.infra_error;
  r.reason = prefix + (t.reason.empty() ? "no reason given" : t.reason);
  return r;
}

StageResult stopped() {
  StageResult r;
  r.infra_error = true;
  r.reason = "stopped";
  return r;
}

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", x);
  return buf;
}

// time_once, again while the failure is the fleet's (a GPU that throttled every sample): a
// fresh process warms up at the clock the GPU holds now. The retries are logged; when they run
// out the failure stays the fleet's, with its cause in the reason.
TimedRun time_retrying(const TimeOnce& time_once, bool baseline, int index,
                       const agent::StopFlag& stop, agent::EventSink* sink) {
  TimedRun t = time_once(baseline, index);
  for (int retry = 1; !t.ok && !t.cause.empty() && retry <= kFleetRetries && !stop.requested();
       ++retry) {
    if (sink)
      sink->log("benchmark", std::string(baseline ? "reference" : "candidate") + " process " +
                                 std::to_string(index + 1) + " gave no result (" + t.cause +
                                 "): timing it again, try " + std::to_string(retry + 1) + " of " +
                                 std::to_string(kFleetRetries + 1));
    t = time_once(baseline, index);
  }
  if (!t.ok && !t.cause.empty()) {
    t.infra_error = true;
    t.reason = "the fleet's, not the kernel's (" + t.cause + ", " +
               std::to_string(kFleetRetries + 1) + " tries): " + t.reason;
  }
  return t;
}

}  // namespace

void put_summary(const std::vector<double>& samples_us, nlohmann::json& data) {
  const auto s = stats::summarize(samples_us);
  data.update({{"median_us", s.median}, {"mean_us", s.mean},   {"stdev_us", s.stdev},
               {"min_us", s.min},       {"max_us", s.max},     {"p10_us", s.p10},
               {"p90_us", s.p90},       {"rel_stdev_pct", s.rel_stdev_pct()},
               {"n", s.n},              {"samples_us", samples_us}});
}

StageResult run_pooled(int processes, const TimeOnce& time_once, const agent::StopFlag& stop,
                       agent::EventSink* sink) {
  StageResult r;
  std::vector<double> pooled;
  nlohmann::json medians = nlohmann::json::array();
  for (int i = 0; i < processes; ++i) {
    if (stop.requested()) return stopped();
    TimedRun t = time_retrying(time_once, false, i, stop, sink);
    if (!t.ok) return failed(t, processes > 1 ? "process " + std::to_string(i + 1) + ": " : "", false);
    for (auto& [k, v] : t.fields.items()) r.data[k] = v;  // the last process's extras
    medians.push_back(stats::summarize(t.samples_us).median);
    pooled.insert(pooled.end(), t.samples_us.begin(), t.samples_us.end());
  }
  if (pooled.empty()) {
    r.infra_error = true;
    r.reason = "the benchmark produced no samples";
    return r;
  }
  put_summary(pooled, r.data);
  r.data["processes"] = processes;
  r.data["process_medians_us"] = medians;
  r.ok = true;
  return r;
}

StageResult run_rounds(const RoundPlan& plan, const TimeOnce& time_once,
                       const agent::Comparison& cmp, const agent::StopFlag& stop,
                       agent::EventSink& sink) {
  const int max_rounds = std::max(1, plan.max_rounds);
  const int min_rounds = std::min(std::max(1, plan.min_rounds), max_rounds);
  std::vector<double> cand_all, base_all, ratios;
  double prev_base = 0;
  nlohmann::json last_fields = nlohmann::json::object();

  auto baseline = [&](int i) -> std::optional<StageResult> {
    TimedRun b = time_retrying(time_once, true, i, stop, &sink);
    if (!b.ok) return failed(b, "the reference " + cmp.label + " failed in round " + std::to_string(i + 1) + ": ", true);
    if (b.samples_us.empty()) return failed(b, "the reference printed no samples", true);
    base_all.insert(base_all.end(), b.samples_us.begin(), b.samples_us.end());
    prev_base = stats::summarize(b.samples_us).median;
    return std::nullopt;
  };

  if (stop.requested()) return stopped();
  if (auto f = baseline(0)) return *f;
  stats::PerfComparison pc;
  for (int round = 0; round < max_rounds; ++round) {
    if (stop.requested()) return stopped();
    TimedRun c = time_retrying(time_once, false, round, stop, &sink);
    if (!c.ok) return failed(c, "", false);
    if (c.samples_us.empty()) return failed(c, "the candidate printed no samples", true);
    last_fields = c.fields;
    cand_all.insert(cand_all.end(), c.samples_us.begin(), c.samples_us.end());
    const double cand_median = stats::summarize(c.samples_us).median;
    const double before = prev_base;
    if (stop.requested()) return stopped();
    // The baseline after the candidate too: a drift during the round then cancels in the ratio.
    if (auto f = baseline(round + 1)) return *f;
    const double ratio = cand_median / (0.5 * (before + prev_base));
    ratios.push_back(ratio);
    sink.log("benchmark", "round " + std::to_string(round + 1) + ": candidate " +
                              std::to_string(cand_median) + " us, ratio " + pct((ratio - 1) * 100));
    if (static_cast<int>(ratios.size()) < min_rounds) continue;
    pc = stats::compare_rounds(ratios, plan.threshold_pct);
    if (pc.verdict != "inconclusive") break;
  }

  StageResult r;
  r.data = last_fields;
  put_summary(cand_all, r.data);
  r.data["perf"] = pc.verdict;
  r.data["delta_pct"] = pc.delta_pct;
  r.data["ci_low_pct"] = pc.ci_low_pct;
  r.data["ci_high_pct"] = pc.ci_high_pct;
  r.data["baseline_us"] = stats::summarize(base_all).median;
  r.data["baseline_label"] = cmp.label;
  r.data["baseline_kind"] = cmp.kind;
  r.data["threshold_pct"] = plan.threshold_pct;
  r.data["interleaved"] = true;
  r.data["rounds"] = ratios.size();
  r.data["round_ratios"] = ratios;
  r.ok = true;
  return r;
}

}  // namespace kfleet::backends
