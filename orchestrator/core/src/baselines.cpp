// Baselines: one accepted result per (kernel, case, GPU class), set by a user, by a campaign's
// kept win, or by the first result of a regression run; resolved for `compare_to: baseline`.
#include <algorithm>

#include "kfleet/common/jobspec.hpp"
#include "kfleet/common/log.hpp"
#include "kfleet/core/fleet.hpp"

namespace kfleet::core {

std::string kernel_key(const store::JobRecord& j) { return j.campaign.empty() ? j.name : j.campaign; }

std::string perf_case(const store::JobRecord& j) {
  const auto g = j.spec.find("gates");
  if (g == j.spec.end() || !g->is_object()) return "";
  const auto p = g->find("performance");
  if (p == g->end() || !p->is_object()) return "";
  for (const char* k : {"case", "case_name"})
    if (p->contains(k) && (*p)[k].is_string()) return (*p)[k].get<std::string>();
  return "";
}

std::string agent_gpu_class(const store::AgentRecord& a) {
  return a.gpus.empty() ? "" : a.gpus.front().gpu_class;
}

nlohmann::json to_json(const store::Baseline& b) {
  return {{"id", b.id},
          {"kernel", b.kernel},
          {"case", b.case_name},
          {"gpu_class", b.gpu_class},
          {"run_id", b.run_id},
          {"job_id", b.job_id},
          {"median_us", b.median_us},
          {"samples", b.samples_us.size()},
          {"simulated", b.simulated},
          {"reason", b.reason},
          {"set_by", b.set_by},
          {"set_at", format_iso8601(b.set_ms)},
          {"superseded", b.superseded_ms != 0},
          {"superseded_at", b.superseded_ms ? format_iso8601(b.superseded_ms) : ""}};
}

bool self_reported_job(const store::JobRecord& j) {
  const auto k = j.spec.find("kernel");
  return k != j.spec.end() && k->is_object() && k->value("family", "") == "custom";
}

std::optional<store::Baseline> baseline_for(store::Store& st, const std::string& kernel,
                                            const std::string& case_name,
                                            const std::string& gpu_class, bool simulated_agent) {
  if (simulated_agent)
    if (auto b = st.current_baseline(kernel, case_name, gpu_class, true)) return b;
  // Never the simulated key for a real agent: a simulated result is no baseline for hardware.
  return st.current_baseline(kernel, case_name, gpu_class, false);
}

std::string verdict_timing_mode(const Verdict& v) {
  const auto m = v.metrics.find("timing_mode");
  return m != v.metrics.end() && m->is_string() ? m->get<std::string>() : "";
}

std::string spec_timing_mode(const nlohmann::json& spec) {
  const auto k = spec.find("kernel");
  if (k == spec.end() || !k->is_object()) return "replay";
  const auto p = k->find("params");
  if (p == k->end() || !p->is_object()) return "replay";
  return p->value("timing", std::string()) == "in_process" ? "in_process" : "replay";
}

nlohmann::json refuse_other_timing_mode(nlohmann::json compare, const std::string& job_mode) {
  const std::string ref_mode = compare.value("timing_mode", std::string());
  if (compare.value("kind", std::string()).empty() || ref_mode.empty() || ref_mode == job_mode)
    return compare;
  const std::string label = compare.value("label", std::string("the baseline"));
  const auto say = [](const std::string& m) {
    return m == "in_process" ? std::string("in-process (its host code ran in the measuring process)")
                             : std::string("replayed (the measuring process ran none of its code)");
  };
  return {{"kind", ""},
          {"timing_mode_mismatch", true},
          {"note", label + " was timed " + say(ref_mode) + ", this job " + say(job_mode) +
                       ": the two modes are not compared; set a baseline timed " +
                       (job_mode == "in_process" ? "in-process" : "replayed") +
                       " (kfleet baseline set RUN)"}};
}

nlohmann::json resolve_baseline(store::Store& st, const store::JobRecord& j,
                                const store::AgentRecord& agent) {
  const std::string kernel = kernel_key(j), cls = agent_gpu_class(agent), cs = perf_case(j);
  auto b = baseline_for(st, kernel, cs, cls, agent.simulated());
  if (!b)
    return {{"kind", ""},
            {"note", "no baseline yet for " + kernel + " case " + cs + " on " + cls +
                         " (kfleet baseline set RUN, or a regression run's first result)"}};
  if (b->simulated && !agent.simulated()) std::abort();  // baseline_for must never allow it
  if (!self_reported_job(j))
    if (auto bj = st.get_job(b->job_id); bj && self_reported_job(*bj))
      return {{"kind", ""},
              {"note", "the baseline of " + kernel + " on " + cls + " (run " + std::to_string(b->run_id) +
                           ") is a custom job's self-reported number: not a baseline for a "
                           "harness-measured job"}};
  nlohmann::json out = {{"kind", "baseline"},
                        {"label", "baseline " + kernel + " on " + cls + " (run " +
                                      std::to_string(b->run_id) + ")"},
                        {"job_id", b->job_id},
                        {"run_id", b->run_id},
                        {"median_us", b->median_us},
                        {"simulated", b->simulated}};
  if (b->samples_us.is_array() && !b->samples_us.empty()) out["samples_us"] = b->samples_us;
  if (auto run = st.get_run(b->run_id); run && run->verdict)
    out["timing_mode"] = verdict_timing_mode(*run->verdict);
  return out;
}

namespace {

// The run's raw timing samples: the last event that carries samples_us (bench.samples,
// bench.result or the benchmark stage's summary), else the verdict's metrics.
nlohmann::json run_samples(store::Store& st, const store::RunRecord& run) {
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& e : st.run_events(run.id, 0, 100000))
    if (e.data.is_object() && e.data.contains("samples_us") && e.data["samples_us"].is_array() &&
        !e.data["samples_us"].empty())
      samples = e.data["samples_us"];
  if (samples.empty() && run.verdict && run.verdict->metrics.contains("samples_us") &&
      run.verdict->metrics["samples_us"].is_array())
    samples = run.verdict->metrics["samples_us"];
  return samples;
}

}  // namespace

Result<store::Baseline> set_baseline_from_run(ControlPlane& cp, std::int64_t run_id,
                                              const std::string& reason,
                                              const std::string& set_by) {
  auto& st = cp.store();
  auto run = st.get_run(run_id);
  if (!run) return make_error(Errc::not_found, "no run " + std::to_string(run_id));
  if (!run->verdict || !run->verdict->median_us)
    return make_error(Errc::invalid_argument,
                      "run " + std::to_string(run_id) +
                          " has no timing result (it did not reach the benchmark); pick a run "
                          "that did (kfleet results)");
  if (run->outcome == RunOutcome::error)
    return make_error(Errc::invalid_argument,
                      "run " + std::to_string(run_id) + " ended in error; an erroneous run is "
                                                        "no baseline");
  auto job = st.get_job(run->job_id);
  auto agent = st.get_agent(run->agent_id);
  if (!job || !agent) return make_error(Errc::internal, "run " + std::to_string(run_id) + " lost its job or agent");
  store::Baseline b;
  b.kernel = kernel_key(*job);
  b.case_name = perf_case(*job);
  b.gpu_class = agent_gpu_class(*agent);
  b.run_id = run->id;
  b.job_id = job->id;
  b.median_us = *run->verdict->median_us;
  b.samples_us = run_samples(st, *run);
  b.simulated = run->simulated || run->verdict->simulated || agent->simulated();
  b.reason = reason;
  b.set_by = set_by;
  auto r = st.set_baseline(b, cp.clock().now_ms());
  if (r)
    st.append_job_event(job->id, "baseline.set",
                        {{"kernel", b.kernel}, {"case", b.case_name}, {"gpu_class", b.gpu_class},
                         {"run_id", b.run_id}, {"median_us", b.median_us},
                         {"simulated", b.simulated}, {"reason", reason},
                         {"set_by", set_by}},
                        cp.clock().now_ms());
  return r;
}

void refresh_regression(ControlPlane& cp, std::int64_t id);  // regressions.cpp

void on_run_finished(ControlPlane& cp, const store::FinishedRun& finished,
                     const store::AgentRecord& agent_identity) {
  auto& st = cp.store();
  const store::RunRecord& run = finished.run;
  const auto& job = finished.job;
  const store::AgentRecord* agent = &agent_identity;
  if (!job || !run.verdict) return;
  const Verdict& v = *run.verdict;
  // kfleetd sets these baselines itself, on behalf of whoever submitted the campaign's
  // variant (or started the regression run, whose jobs carry its starter as submitter).
  if (!job->campaign.empty() && !job->parent.empty() && v.outcome == RunOutcome::passed &&
      v.perf == "improved") {
    auto r = set_baseline_from_run(cp, run.id, "kept win of campaign " + job->campaign + " (job " +
                                                   std::to_string(job->id) + ")",
                                   job->submitted_by);
    if (!r) log::warn("core", "kept win of job ", job->id, " is not a baseline: ", r.error().message);
  }
  const std::int64_t reg = finished.regression_id;
  if (reg == 0) return;
  if (v.outcome == RunOutcome::passed && v.median_us &&
      !baseline_for(st, kernel_key(*job), perf_case(*job), agent_gpu_class(*agent),
                    agent->simulated())) {
    auto r = set_baseline_from_run(cp, run.id, "first result in regression run " + std::to_string(reg),
                                   job->submitted_by);
    if (!r) log::warn("core", "regression ", reg, ": no baseline from run ", run.id, ": ", r.error().message);
  }
  refresh_regression(cp, reg);
}

}  // namespace kfleet::core
