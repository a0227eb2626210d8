// Row <-> record mapping, and the small record helpers the store header declares.
#include <algorithm>

#include "sqlite_store.hpp"

namespace kfleet::store {

const char* to_string(AgentState s) {
  switch (s) {
    case AgentState::idle: return "idle";
    case AgentState::busy: return "busy";
    case AgentState::lost: return "lost";
    case AgentState::retired: return "retired";
  }
  return "unknown";
}

bool AgentRecord::simulated() const {
  return backend == "simulated" ||
         std::any_of(gpus.begin(), gpus.end(), [](const GpuInfo& g) { return g.simulated; });
}

namespace sqlite {

const char* const kJobColumns =
    "id, name, campaign, parent, priority, gpu, regions, spec, spec_yaml, source_name, "
    "bundle_hash, content_hash, state, state_reason, attempts, max_attempts, current_run_id, "
    "submitted_by, created_ms, updated_ms, verdict, simulated, host_exclusive, cancelled_by";
const char* const kRunColumns =
    "id, job_id, agent_id, attempt, fencing_token, outcome, stage, started_ms, "
    "lease_expires_ms, finished_ms, verdict, simulated, events_contiguous, host, slot, "
    "host_exclusive";
const char* const kAgentColumns =
    "id, name, region, backend, gpus, token_hash, provider, instance_id, info, state, "
    "current_run_id, enrolled_ms, last_seen_ms, host, slot";
const char* const kEventColumns = "id, job_id, run_id, seq, ts_ms, type, data";

namespace {

std::optional<Verdict> read_verdict(const Stmt& q, int col) {
  if (q.is_null(col)) return std::nullopt;
  auto j = parse_json(q.text(col));
  if (!j.is_object()) return std::nullopt;
  return verdict_from_json(j);
}

}  // namespace

AgentState agent_state_from_string(const std::string& s) {
  if (s == "busy") return AgentState::busy;
  if (s == "lost") return AgentState::lost;
  if (s == "retired") return AgentState::retired;
  return AgentState::idle;
}

JobRecord read_job(const Stmt& q) {
  JobRecord j;
  j.id = q.i64(0);
  j.name = q.text(1);
  j.campaign = q.text(2);
  j.parent = q.text(3);
  j.priority = q.i32(4);
  j.gpu = q.text(5);
  auto regions = parse_json(q.text(6));
  if (regions.is_array())
    for (const auto& r : regions)
      if (r.is_string()) j.regions.push_back(r.get<std::string>());
  j.spec = parse_json(q.text(7));
  j.spec_yaml = q.text(8);
  j.source_name = q.text(9);
  j.bundle_hash = q.text(10);
  j.content_hash = q.text(11);
  j.state = job_state_from_string(q.text(12)).value_or(JobState::error);
  j.state_reason = q.text(13);
  j.attempts = q.i32(14);
  j.max_attempts = q.i32(15);
  j.current_run_id = q.i64(16);
  j.submitted_by = q.text(17);
  j.created_ms = q.i64(18);
  j.updated_ms = q.i64(19);
  j.verdict = read_verdict(q, 20);
  j.simulated = q.boolean(21);
  j.host_exclusive = q.boolean(22);
  j.cancelled_by = q.text(23);
  return j;
}

RunRecord read_run(const Stmt& q) {
  RunRecord r;
  r.id = q.i64(0);
  r.job_id = q.i64(1);
  r.agent_id = q.i64(2);
  r.attempt = q.i32(3);
  r.fencing_token = q.i64(4);
  r.outcome = run_outcome_from_string(q.text(5)).value_or(RunOutcome::error);
  r.stage = q.text(6);
  r.started_ms = q.i64(7);
  r.lease_expires_ms = q.i64(8);
  r.finished_ms = q.i64(9);
  r.verdict = read_verdict(q, 10);
  r.simulated = q.boolean(11);
  r.events_contiguous = q.i64(12);
  r.host = q.text(13);
  r.slot = q.i32(14);
  r.host_exclusive = q.boolean(15);
  return r;
}

AgentRecord read_agent(const Stmt& q) {
  AgentRecord a;
  a.id = q.i64(0);
  a.name = q.text(1);
  a.region = q.text(2);
  a.backend = q.text(3);
  auto gpus = parse_json(q.text(4));
  if (gpus.is_array())
    for (const auto& g : gpus) a.gpus.push_back(gpu_info_from_json(g));
  a.token_hash = q.text(5);
  a.provider = q.text(6);
  a.instance_id = q.text(7);
  a.info = parse_json(q.text(8));
  if (a.info.is_null()) a.info = nlohmann::json::object();
  a.state = agent_state_from_string(q.text(9));
  a.current_run_id = q.i64(10);
  a.enrolled_ms = q.i64(11);
  a.last_seen_ms = q.i64(12);
  a.host = q.text(13);
  a.slot = q.i32(14);
  return a;
}

Event read_event(const Stmt& q) {
  Event e;
  e.id = q.i64(0);
  e.job_id = q.i64(1);
  e.run_id = q.i64(2);
  e.seq = q.i64(3);
  e.ts_ms = q.i64(4);
  e.type = q.text(5);
  e.data = parse_json(q.text(6));
  if (e.data.is_null()) e.data = nlohmann::json::object();
  return e;
}

}  // namespace sqlite
}  // namespace kfleet::store
