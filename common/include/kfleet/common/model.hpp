#pragma once
// Domain types both sides share: job states, run outcomes, verdicts and the GPU inventory an
// agent enrols with. Their JSON forms are the API's (docs/openapi.yaml).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/clock.hpp"

namespace kfleet {

// queued → waiting_capacity? → leased → building → gating → benchmarking → terminal
enum class JobState {
  queued, waiting_capacity, leased, building, gating, benchmarking,
  passed, rejected, error, cancelled,
};
const char* to_string(JobState s);
std::optional<JobState> job_state_from_string(const std::string& s);
bool is_terminal(JobState s);
bool is_active(JobState s);  // leased, building, gating or benchmarking: an agent holds it

// How a run (one attempt of a job on one agent) ended.
enum class RunOutcome { running, passed, rejected, error, lost, cancelled };
const char* to_string(RunOutcome o);
std::optional<RunOutcome> run_outcome_from_string(const std::string& s);

// How a problem's kernel compares with one of kfleet's own PyTorch references of that problem
// (eager, torch.compile), both timed on the same agent by the same replay, on the timed case.
// speedup = reference median / kernel median: above 1 the kernel is faster.
struct BaselineComparison {
  std::string baseline;                     // "eager" | "compile"
  std::optional<double> speedup;            // absent when the reference could not be timed
  std::optional<double> ci_low, ci_high;    // bootstrap 95 % interval of the speedup
  std::optional<double> reference_us;       // the reference's replayed median
  std::string case_name;                    // the timed case
  // What the reference's timing is cached by: problem, version, case, gpu_class, torch, driver.
  nlohmann::json key = nlohmann::json::object();
  bool cached = false;                      // from the agent's cache, not timed in this run
  std::string note;                         // why there is no speedup, or what to know about it
  bool simulated = false;                   // made up by a simulated agent, not timed on a GPU
};
nlohmann::json to_json(const BaselineComparison& c);
BaselineComparison baseline_comparison_from_json(const nlohmann::json& j);

// A run's verdict as the agent reports it on finish.
struct Verdict {
  RunOutcome outcome = RunOutcome::error;  // passed | rejected | error
  std::string gate;        // for rejected: resources | correctness | performance
  std::string reason;      // one line: "do not merge: +6.1% (696 µs vs 656 µs)"
  std::string perf;        // improved | regressed | same | inconclusive | "" (no comparison)
  std::optional<double> delta_pct, ci_low_pct, ci_high_pct;
  std::optional<double> median_us, baseline_us;
  bool simulated = false;  // made by the simulated GPU backend: never a baseline for real GPUs
  // The job's code ran without the sandbox (an agent started with --unsandboxed): it could
  // have reached the agent's host, so the result is only as good as the job's honesty.
  bool unsandboxed = false;
  // A custom job's numbers: its own steps timed themselves, not the harness. Never a baseline
  // for harness-measured jobs.
  bool self_reported = false;
  nlohmann::json metrics = nlohmann::json::object();  // anything else worth keeping
  // A problem's kernel against kfleet's PyTorch references ("0.93x eager, 1.41x compile").
  std::vector<BaselineComparison> versus;
};
nlohmann::json to_json(const Verdict& v);
Verdict verdict_from_json(const nlohmann::json& j);

struct GpuInfo {
  std::string gpu_class;   // "L4", "H100", "gfx1151" (a marketing-ish class the jobs name)
  std::string arch;        // "sm_89", "sm_90a", "gfx1151"
  std::string name;        // "NVIDIA L4"
  std::string vendor;      // nvidia | amd | simulated
  std::int64_t memory_bytes = 0;
  std::int64_t l2_bytes = 0;
  std::string driver;
  bool simulated = false;
  nlohmann::json extra = nlohmann::json::object();  // clocks, power, temperature, ...
};
nlohmann::json to_json(const GpuInfo& g);
GpuInfo gpu_info_from_json(const nlohmann::json& j);

// Does an agent with this GPU serve a job that asks for `wanted` (a class or an arch)?
// Case-insensitive; "sm_90" matches an "sm_90a" agent.
bool gpu_matches(const std::string& wanted, const GpuInfo& gpu);

}  // namespace kfleet
