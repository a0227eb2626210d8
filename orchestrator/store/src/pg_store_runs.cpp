// Leases and runs: granting and event ingestion, which differ by backend; the stage order,
// renewal, finishing, hand-off, expiry and the run queries are shared/runs.inc.
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_set>

#include "pg_store.hpp"

namespace kfleet::store::pg {

#include "shared/runs.inc"

Result<Lease> PgStore::grant_lease(std::int64_t job_id, std::int64_t agent_id, TimeMs ttl_ms,
                                       TimeMs now) {
  if (ttl_ms <= 0) return make_error(Errc::invalid_argument, "lease ttl must be positive");
  return db_->transaction([&]() -> Result<Lease> {
    auto job = load_job(job_id);
    if (!job) return make_error(Errc::not_found, "job " + str(job_id) + " not found");
    if (job->state != JobState::queued && job->state != JobState::waiting_capacity) {
      return make_error(Errc::conflict, "job " + str(job_id) + " is " + to_string(job->state) +
                                            ", not pending; only queued or waiting_capacity "
                                            "jobs can be leased");
    }
    if (job->attempts >= job->max_attempts) {
      return make_error(Errc::conflict, "job " + str(job_id) + " has used all " +
                                            str(job->max_attempts) + " attempts");
    }
    auto agent = load_agent(agent_id);
    if (!agent) return make_error(Errc::not_found, "agent " + str(agent_id) + " not found");
    if (agent->state != AgentState::idle || agent->current_run_id != 0) {
      return make_error(Errc::conflict,
                        "agent " + str(agent_id) + " is " + to_string(agent->state) +
                            (agent->current_run_id ? " with run " + str(agent->current_run_id)
                                                   : std::string()) +
                            "; an agent runs one job at a time");
    }
    // The slot rules (also unique indexes, see pg_migrations.cpp): one running lease per GPU slot;
    // a host-exclusive lease only on an empty host, and nothing beside one.
    {
      auto q = db_->prepare(
          "SELECT id, slot, host_exclusive FROM runs WHERE outcome = 'running' AND host = ? "
          "ORDER BY id");
      q.args(agent->host);
      while (q.step()) {
        const std::int64_t other = q.i64(0);
        const int other_slot = q.i32(1);
        const bool other_exclusive = q.boolean(2);
        std::string why;
        if (other_slot == agent->slot)
          why = "GPU slot " + std::to_string(agent->slot) + " of host " + agent->host +
                " already holds run " + str(other) + "; a slot holds one lease at a time";
        else if (other_exclusive)
          why = "host " + agent->host + " is held by host-exclusive run " + str(other);
        else if (job->host_exclusive)
          why = "job " + str(job_id) + " is host-exclusive and host " + agent->host +
                " still runs run " + str(other) + " on slot " + std::to_string(other_slot);
        if (!why.empty()) return make_error(Errc::conflict, why);
      }
    }
    // The next fencing token, the run, and the job and agent taking it: one statement.
    const int attempt = job->attempts + 1;
    const TimeMs expires = now + ttl_ms;
    std::int64_t token = 0, run_id = 0;
    {
      auto q = db_->prepare(
          "WITH t AS (UPDATE counters SET value = value + 1 WHERE name = 'fencing_token' "
          "RETURNING value), "
          "r AS (INSERT INTO runs (job_id, agent_id, attempt, fencing_token, outcome, "
          "started_ms, lease_expires_ms, host, slot, host_exclusive) "
          "SELECT ?, ?, ?, t.value, 'running', ?, ?, ?, ?, ? FROM t RETURNING id, fencing_token), "
          "j AS (UPDATE jobs SET attempts = ?, current_run_id = (SELECT id FROM r) WHERE id = ?), "
          "a AS (UPDATE agents SET state = 'busy', current_run_id = (SELECT id FROM r), "
          "last_seen_ms = ? WHERE id = ?) "
          "SELECT id, fencing_token FROM r");
      q.args(job_id, agent_id, attempt, now, expires, agent->host, agent->slot,
             job->host_exclusive ? 1 : 0, attempt, job_id, now, agent_id);
      if (!q.step()) throw DbError{"", "the fencing counter is missing (schema damaged?)"};
      run_id = q.i64(0);
      token = q.i64(1);
    }
    insert_job_event(job_id, event_type::lease_granted,
                     {{"run_id", run_id},
                      {"agent_id", agent_id},
                      {"fencing_token", token},
                      {"attempt", attempt},
                      {"host", agent->host},
                      {"slot", agent->slot},
                      {"host_exclusive", job->host_exclusive}},
                     now);
    write_job_state(job_id, JobState::leased,
                    "leased to agent " + str(agent_id) + " (" + agent->name + "), attempt " +
                        std::to_string(attempt) + " of " + std::to_string(job->max_attempts),
                    now);
    return Lease{run_id, job_id, agent_id, token, expires};
  });
}

Result<IngestResult> PgStore::append_run_events(std::int64_t run_id,
                                                   std::int64_t fencing_token,
                                                   const std::vector<Event>& events, TimeMs now) {
  for (const auto& e : events) {
    if (e.seq < 1) {
      return make_error(Errc::invalid_argument, "event seq " + str(e.seq) + " of run " +
                                                    str(run_id) + " must be >= 1");
    }
    if (e.type.empty())
      return make_error(Errc::invalid_argument, "event seq " + str(e.seq) + " has no type");
  }
  return db_->transaction([&]() -> Result<IngestResult> {
    auto run = check_fenced(run_id, fencing_token);
    if (!run) return run.error();
    IngestResult res;
    std::int64_t stage_seq = 0;
    {
      auto q = db_->prepare("SELECT stage_seq FROM runs WHERE id = ?");
      q.args(run_id);
      if (q.step()) stage_seq = q.i64(0);
    }
    std::string last_stage;
    JobState furthest = JobState::queued;
    // Two statements per batch, whatever its size: which of its seqs are stored already (an
    // index lookup), then the new ones inserted from arrays, numbered from the counters row in
    // batch order (ids stay gap-free and follow the batch, as with SQLite).
    auto array_of = [](const auto& items, auto&& put) {
      std::string out = "{";
      bool first = true;
      for (const auto& it : items) {
        if (!first) out += ',';
        first = false;
        put(out, it);
      }
      return out + "}";
    };
    auto put_int = [](std::string& out, std::int64_t v) { out += std::to_string(v); };
    auto put_text = [](std::string& out, const std::string& v) {
      out += '"';
      for (char ch : v) {
        if (ch == '"' || ch == '\\') out += '\\';
        out += ch;
      }
      out += '"';
    };
    std::unordered_set<std::int64_t> seen;
    {
      std::vector<std::int64_t> all;
      all.reserve(events.size());
      std::int64_t lo = INT64_MAX, hi = 0;
      for (const auto& e : events) {
        all.push_back(e.seq);
        lo = std::min(lo, e.seq);
        hi = std::max(hi, e.seq);
      }
      // The BETWEEN bounds the index range whatever plan the server picks (before its
      // statistics know the table, it may filter the ANY instead of looking each seq up).
      auto q = db_->prepare(
          "SELECT seq FROM events WHERE job_id = ? AND run_id = ? AND seq BETWEEN ? AND ? "
          "AND seq = ANY(?::bigint[])");
      q.args(run->job_id, run_id, lo, hi, array_of(all, put_int));
      while (q.step()) seen.insert(q.i64(0));
    }
    std::vector<std::int64_t> seqs, tss;
    std::vector<std::string> types, datas;
    for (const auto& e : events) {
      if (!seen.insert(e.seq).second) {
        ++res.duplicates;
        continue;
      }
      ++res.accepted;
      seqs.push_back(e.seq);
      tss.push_back(e.ts_ms ? e.ts_ms : now);
      types.push_back(e.type);
      datas.push_back(!e.data_text.empty() ? e.data_text
                      : e.data.is_null() ? std::string("{}") : dump_json(e.data));
      if (e.type != event_type::stage_started) continue;
      auto it = e.data.is_object() ? e.data.find("stage") : e.data.end();
      if (!e.data.is_object() || it == e.data.end() || !it->is_string()) continue;
      const auto stage_name = it->get<std::string>();
      if (e.seq > stage_seq) {
        stage_seq = e.seq;
        last_stage = stage_name;
      }
      const JobState s = state_for_stage(stage_name);
      if (progress(s) > progress(furthest)) furthest = s;
    }
    if (!seqs.empty()) {
      const auto n = static_cast<std::int64_t>(seqs.size());
      db_->prepare(
             "WITH c AS (UPDATE counters SET value = value + ? WHERE name = 'event_id' "
             "RETURNING value - ? AS base) "
             "INSERT INTO events (id, job_id, run_id, seq, ts_ms, type, data) "
             "SELECT c.base + t.ord, ?, ?, t.seq, t.ts_ms, t.type, t.data FROM c, "
             "unnest(?::bigint[], ?::bigint[], ?::text[], ?::text[]) "
             "WITH ORDINALITY AS t(seq, ts_ms, type, data, ord)")
          .args(n, n, run->job_id, run_id, array_of(seqs, put_int), array_of(tss, put_int),
                array_of(types, put_text), array_of(datas, put_text))
          .run();
    }
    // The watermark: how far the stored seqs above it run on without a gap, counted by the
    // server (seq = watermark + rank holds exactly for the gap-free prefix).
    res.contiguous = run->events_contiguous;
    {
      auto q = db_->prepare(
          "SELECT ? + count(*) FROM (SELECT seq, row_number() OVER (ORDER BY seq) AS rn "
          "FROM events WHERE job_id = ? AND run_id = ? AND seq > ?) t WHERE seq = ? + rn");
      const std::int64_t c = res.contiguous;
      q.args(c, run->job_id, run_id, c, c);
      if (q.step()) res.contiguous = q.i64(0);
    }
    db_->prepare("UPDATE runs SET events_contiguous = ? WHERE id = ?")
        .args(res.contiguous, run_id)
        .run();
    if (!last_stage.empty()) {
      db_->prepare("UPDATE runs SET stage = ?, stage_seq = ? WHERE id = ?")
          .args(last_stage, stage_seq, run_id)
          .run();
    }
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

}  // namespace kfleet::store::pg
