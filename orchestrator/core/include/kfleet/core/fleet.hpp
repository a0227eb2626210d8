#pragma once
// Fleet-level results on top of the control plane: baselines (what `compare_to: baseline`
// means), campaigns (kept wins and rejections along a lineage) and fleet regression runs
// (a suite on every GPU class, each result against its baseline). All of it runs on the
// control-plane thread, like everything that writes the store.
//
// Kernel identity: a baseline belongs to (kernel, case, GPU class) where kernel is the job's
// `campaign` when it has one, else its `name`: a campaign's variants all measure one kernel.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "kfleet/common/result.hpp"
#include "kfleet/core/control_plane.hpp"
#include "kfleet/store/store.hpp"

namespace kfleet::core {

std::string kernel_key(const store::JobRecord& j);
std::string perf_case(const store::JobRecord& j);           // gates.performance.case, or ""
std::string agent_gpu_class(const store::AgentRecord& a);   // its first GPU's class
// A custom job's numbers are its own scripts' word (self-reported), not the harness's: never a
// baseline or reference for a harness-measured job.
bool self_reported_job(const store::JobRecord& j);

// The lease's compare object for `compare_to: baseline` on this agent. A real agent only ever
// gets a real baseline; a simulated one prefers a simulated baseline, then a real one.
// How a run was timed, from its verdict: "replay" (the measuring process ran none of the job's
// code), "in_process" (the job's host code ran in it), or "" when the run did not record it
// (runs of agents before the mode was recorded, simulated runs).
std::string verdict_timing_mode(const Verdict& v);
// How a job asks to be timed: kernel.params.timing "in_process", else "replay" (the default).
std::string spec_timing_mode(const nlohmann::json& spec);
// A comparison whose reference (`compare`, resolved with its "timing_mode") was timed in the
// other mode than the job: no comparison, with a note that says why. Unrecorded modes compare.
nlohmann::json refuse_other_timing_mode(nlohmann::json compare, const std::string& job_mode);

nlohmann::json resolve_baseline(store::Store& st, const store::JobRecord& j,
                                const store::AgentRecord& agent);
std::optional<store::Baseline> baseline_for(store::Store& st, const std::string& kernel,
                                            const std::string& case_name,
                                            const std::string& gpu_class, bool simulated_agent);

// Makes a finished run with a timing result the baseline of its kernel/case/class; `set_by`
// is the user recorded as having set it.
Result<store::Baseline> set_baseline_from_run(ControlPlane& cp, std::int64_t run_id,
                                              const std::string& reason,
                                              const std::string& set_by);
nlohmann::json to_json(const store::Baseline& b);

// Called when a run finished with a verdict: a campaign's kept win becomes the baseline; a
// regression run's result fills a missing baseline; the regression's matrix is recomputed.
// The job and its regression run are those finish_agent_run read with the finish; `agent` is
// the run's agent (its identity: GPUs, backend). Nothing here reads the store unless a
// baseline or a regression run has to change.
void on_run_finished(ControlPlane& cp, const store::FinishedRun& finished,
                     const store::AgentRecord& agent);

// Starts a regression run from a POST /api/v1/regressions body (load_suite_request form).
Result<store::RegressionRecord> start_regression(ControlPlane& cp, const nlohmann::json& request,
                                                 const std::string& submitted_by);
// {id, suite, created, state, regressed, cells: [...], fast_p} recomputed from its jobs (and
// stored; fast_p is computed from the cells each time).
Result<nlohmann::json> regression_view(ControlPlane& cp, std::int64_t id);
nlohmann::json regression_summary(const store::RegressionRecord& r);  // for the list
// fast_p (kfleet::fast_p_json) over a regression run's cells: those of a problem's kernel that
// are no longer pending, each cell (a kernel on a GPU class) one kernel of the denominator.
nlohmann::json regression_fast_p(const nlohmann::json& cells);

// {name, jobs, current_best, kept_wins: [...], rejections: [...], pending: [...], no_repeat,
// fast_p}: fast_p over the campaign's finished jobs on a problem's kernel.
Result<nlohmann::json> campaign_view(store::Store& st, const std::string& name);

}  // namespace kfleet::core
