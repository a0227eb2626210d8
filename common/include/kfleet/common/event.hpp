#pragma once
// Everything a run produces is an event numbered by (run id, seq). The agent numbers its
// events 1, 2, 3, ... per run; ingestion is idempotent on (run_id, seq), so a retried upload
// never duplicates and a spool replay never leaves a gap. The orchestrator's own events about
// a job (scheduling decisions, state changes) carry run_id 0 and a store-assigned seq.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "kfleet/common/clock.hpp"

namespace kfleet {

namespace event_type {
// orchestrator-side (run_id 0)
inline constexpr const char* job_submitted = "job.submitted";
inline constexpr const char* job_state = "job.state";            // {state, reason}
inline constexpr const char* sched_decision = "sched.decision";  // {action, agent?, region?, reason}
inline constexpr const char* capacity = "capacity";              // {region, outcome, message}
inline constexpr const char* lease_granted = "lease.granted";    // {run_id, agent_id, token}
inline constexpr const char* lease_lost = "lease.lost";          // {run_id, agent_id, reason}
// A compile agent's run passed build and resources: the job goes on to a GPU agent.
inline constexpr const char* run_handed_off = "run.handed_off";  // {run_id, agent_id, reason}
// agent-side (per run)
inline constexpr const char* stage_started = "stage.started";    // {stage}
inline constexpr const char* stage_finished = "stage.finished";  // {stage, ok, reason?, ...}
inline constexpr const char* log_line = "log";                   // {stage, stream, text}
inline constexpr const char* resources = "resources";            // {kernels: [...], ok, violations}
inline constexpr const char* correctness = "correctness";        // {case, seed, metrics..., ok}
inline constexpr const char* bench_sample = "bench.samples";     // {case, samples_us: [...]}
inline constexpr const char* bench_result = "bench.result";      // {median_us, mean_us, ...}
inline constexpr const char* verdict = "verdict";                // {status, gate?, reason, ...}
inline constexpr const char* handoff = "handoff";                // {to, reason}: compile phase done
}  // namespace event_type

// Stages of a run, in order. Each stage.started / stage.finished names one.
namespace stage {
inline constexpr const char* fetch = "fetch";
inline constexpr const char* build = "build";
inline constexpr const char* resources = "resources";
inline constexpr const char* correctness = "correctness";
inline constexpr const char* benchmark = "benchmark";
inline constexpr const char* verdict = "verdict";
inline constexpr const char* profile = "profile";
}  // namespace stage

struct Event {
  std::int64_t id = 0;      // store-assigned global order (for SSE Last-Event-ID); 0 before insert
  std::int64_t job_id = 0;
  std::int64_t run_id = 0;  // 0: an orchestrator event about the job
  std::int64_t seq = 0;
  TimeMs ts_ms = 0;
  std::string type;
  nlohmann::json data = nlohmann::json::object();
  // When set, the data as JSON text (an object), already checked, and `data` is left empty:
  // ingestion stores what the agent sent without parsing and re-serialising it.
  std::string data_text;
};

nlohmann::json to_json(const Event& e);
Event event_from_json(const nlohmann::json& j);  // tolerant: missing fields get defaults

}  // namespace kfleet
