// Leases and runs: granting and event ingestion, which differ by backend; the stage order,
// renewal, finishing, hand-off, expiry and the run queries are shared/runs.inc.
#include <string>
#include <vector>

#include "shared/lease_rules.hpp"
#include "sqlite_store.hpp"

namespace kfleet::store::sqlite {

#include "shared/runs.inc"

Result<FinishedRun> SqliteStore::finish_agent_run(std::int64_t agent_id, std::int64_t run_id,
                                                  std::int64_t fencing_token, const Verdict& v,
                                                  TimeMs now, const AmendVerdict& amend) {
  return finish_reading_first(agent_id, run_id, fencing_token, v, now, amend);
}

namespace {

// The job as a grant leaves it, as get_job would read it back (PostgreSQL's grant returns it
// from its statement).
JobRecord as_leased(JobRecord job, const Lease& lease, int attempt, const std::string& reason,
                    TimeMs now) {
  job.state = JobState::leased;
  job.state_reason = reason;
  job.attempts = attempt;
  job.current_run_id = lease.run_id;
  job.updated_ms = now;
  return job;
}

}  // namespace

Result<Lease> SqliteStore::grant_lease(std::int64_t job_id, std::int64_t agent_id, TimeMs ttl_ms,
                                   TimeMs now, const nlohmann::json& decision,
                                   JobRecord* leased_job) {
  if (ttl_ms <= 0) return make_error(Errc::invalid_argument, "lease ttl must be positive");
  return db_->transaction([&] {
    return grant_in_transaction(job_id, agent_id, ttl_ms, now, decision, leased_job);
  });
}

Result<Lease> SqliteStore::grant_in_transaction(std::int64_t job_id, std::int64_t agent_id,
                                                TimeMs ttl_ms, TimeMs now,
                                                const nlohmann::json& decision,
                                                JobRecord* leased_job) {
  auto job = load_job(job_id);
  auto agent = load_agent(agent_id);
  if (auto refused = lease_refusal(job_id, agent_id, job, agent)) return *refused;
  // The slot rules (also unique indexes, see migration 3), on the runs running on its host.
  {
    auto q = db_->prepare(
        "SELECT id, slot, host_exclusive FROM runs WHERE outcome = 'running' AND host = ? "
        "ORDER BY id");
    q.args(agent->host);
    std::vector<HostRun> host_runs;
    while (q.step()) host_runs.push_back({q.i64(0), q.i32(1), q.boolean(2)});
    if (auto refused = slot_refusal(job_id, *job, *agent, host_runs)) return *refused;
  }
  db_->prepare("UPDATE counters SET value = value + 1 WHERE name = 'fencing_token'").run();
  std::int64_t token = 0;
  {
    auto q = db_->prepare("SELECT value FROM counters WHERE name = 'fencing_token'");
    q.step();
    token = q.i64(0);
  }
  const int attempt = job->attempts + 1;
  const TimeMs expires = now + ttl_ms;
  db_->prepare(
         "INSERT INTO runs (job_id, agent_id, attempt, fencing_token, outcome, started_ms, "
         "lease_expires_ms, host, slot, host_exclusive) "
         "VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)")
      .args(job_id, agent_id, attempt, token, now, expires, agent->host, agent->slot,
            job->host_exclusive ? 1 : 0)
      .run();
  const std::int64_t run_id = db_->last_insert_id();
  db_->prepare("UPDATE jobs SET attempts = ?, current_run_id = ? WHERE id = ?")
      .args(attempt, run_id, job_id)
      .run();
  db_->prepare("UPDATE agents SET state = 'busy', current_run_id = ?, last_seen_ms = ? "
               "WHERE id = ?")
      .args(run_id, now, agent_id)
      .run();
  if (!decision.is_null()) insert_job_event(job_id, event_type::sched_decision, decision, now);
  insert_job_event(job_id, event_type::lease_granted,
                   {{"run_id", run_id},
                    {"agent_id", agent_id},
                    {"fencing_token", token},
                    {"attempt", attempt},
                    {"host", agent->host},
                    {"slot", agent->slot},
                    {"host_exclusive", job->host_exclusive}},
                   now);
  const std::string reason = "leased to agent " + str(agent_id) + " (" + agent->name +
                             "), attempt " + std::to_string(attempt) + " of " +
                             std::to_string(job->max_attempts);
  write_job_state(job_id, JobState::leased, reason, now);
  const Lease lease{run_id, job_id, agent_id, token, expires};
  if (leased_job) *leased_job = as_leased(*job, lease, attempt, reason, now);
  return lease;
}

namespace {

constexpr std::size_t kEventRows = 64;

// "INSERT OR IGNORE INTO events ... VALUES (?, ...), ..." with `rows` rows.
const std::string& insert_events_sql(std::size_t rows) {
  static const std::vector<std::string> sqls = [] {
    std::vector<std::string> v(kEventRows + 1);
    for (std::size_t n = 1; n <= kEventRows; ++n) {
      v[n] = "INSERT OR IGNORE INTO events (job_id, run_id, seq, ts_ms, type, data) VALUES ";
      for (std::size_t r = 0; r < n; ++r) v[n] += r ? ", (?, ?, ?, ?, ?, ?)" : "(?, ?, ?, ?, ?, ?)";
    }
    return v;
  }();
  return sqls[rows];
}

}  // namespace

Result<IngestResult> SqliteStore::append_run_events(std::int64_t run_id,
                                                   std::int64_t fencing_token,
                                                   const std::vector<Event>& events, TimeMs now,
                                                   std::int64_t agent_id) {
  if (auto c = check_run_events(run_id, events); !c) return c.error();
  return db_->transaction([&]() -> Result<IngestResult> {
    auto run = check_fenced(load_run(run_id), run_id, fencing_token, agent_id);
    if (!run) return run.error();
    IngestResult res;
    StageProgress moved;
    {
      auto q = db_->prepare("SELECT stage_seq FROM runs WHERE id = ?");
      q.args(run_id);
      if (q.step()) moved.stage_seq = q.i64(0);
    }
    // The ingestion hot path: up to kEventRows events per INSERT (a prepared statement per row
    // count, reused), which saves the per-statement work (the AUTOINCREMENT counter among it)
    // on each event. A stage.started event goes alone: whether it was new decides the stage.
    std::size_t i = 0;
    while (i < events.size()) {
      const bool stage = events[i].type == event_type::stage_started;
      std::size_t j = i + 1;
      if (!stage)
        while (j < events.size() && j - i < kEventRows &&
               events[j].type != event_type::stage_started)
          ++j;
      auto insert = db_->prepare(insert_events_sql(j - i));
      int p = 0;
      for (std::size_t k = i; k < j; ++k) {
        const Event& e = events[k];
        insert.bind(p + 1, run->job_id);
        insert.bind(p + 2, run_id);
        insert.bind(p + 3, e.seq);
        insert.bind(p + 4, e.ts_ms ? e.ts_ms : now);
        insert.bind(p + 5, e.type);
        p += 6;
        if (!e.data_text.empty()) insert.bind(p, e.data_text);
        else insert.bind(p, e.data.is_null() ? std::string("{}") : dump_json(e.data));
      }
      insert.run();
      const int added = db_->changes();
      res.accepted += added;
      res.duplicates += static_cast<int>(j - i) - added;
      if (stage && added == 1) moved.see(events[i]);
      i = j;
    }
    res.contiguous = run->events_contiguous;
    {
      auto q = db_->prepare(
          "SELECT seq FROM events WHERE job_id = ? AND run_id = ? AND seq > ? ORDER BY seq");
      q.args(run->job_id, run_id, res.contiguous);
      while (q.step() && q.i64(0) == res.contiguous + 1) ++res.contiguous;
    }
    db_->prepare("UPDATE runs SET events_contiguous = ? WHERE id = ?")
        .args(res.contiguous, run_id)
        .run();
    set_run_stage(*db_, run_id, moved.last_stage, moved.stage_seq);
    const JobState furthest = moved.furthest;
    if (progress(furthest) > 0) {
      auto job = load_job(run->job_id);
      if (job && job->current_run_id == run_id && is_active(job->state) &&
          progress(furthest) > progress(job->state)) {
        write_job_state(job->id, furthest, std::string("agent ") + str(run->agent_id) +
                                               " reached the " + to_string(furthest) + " stage",
                        now);
      }
    }
    return res;
  });
}

}  // namespace kfleet::store::sqlite
