// Leases and runs: granting and event ingestion, which differ by backend; the stage order,
// renewal, finishing, hand-off, expiry and the run queries are shared/runs.inc.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "pg_store.hpp"

namespace kfleet::store::pg {

#include "shared/runs.inc"

PgStore::GrantReads PgStore::send_grant_reads(std::int64_t job_id, std::int64_t agent_id) {
  static const std::string job_sql =
      std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?";
  static const std::string agent_sql =
      std::string("SELECT ") + kAgentColumns + " FROM agents WHERE id = ?";
  GrantReads r{db_->prepare(job_sql), db_->prepare(agent_sql),
               db_->prepare("SELECT id, slot, host_exclusive FROM runs WHERE outcome = 'running' "
                            "AND host = (SELECT host FROM agents WHERE id = ?) ORDER BY id")};
  r.job.args(job_id).send();
  r.agent.args(agent_id).send();
  r.host.args(agent_id).send();
  return r;
}

std::optional<Error> PgStore::grant_refusal(std::int64_t job_id, std::int64_t agent_id,
                                            const std::optional<JobRecord>& job,
                                            const std::optional<AgentRecord>& agent,
                                            const std::vector<HostRun>& host_runs) {
  if (auto refused = lease_refusal(job_id, agent_id, job, agent)) return refused;
  // The slot rules (also unique indexes, see pg_migrations.cpp): one running lease per GPU slot;
  // a host-exclusive lease only on an empty host, and nothing beside one.
  for (const auto& r : host_runs) {
    const std::string why = slot_rule_refusal(*agent, *job, job_id, r.id, r.slot, r.host_exclusive);
    if (!why.empty()) return make_error(Errc::conflict, why);
  }
  return std::nullopt;
}

Stmt PgStore::queue_grant(const JobRecord& job, const AgentRecord& agent, TimeMs expires,
                          TimeMs now, const nlohmann::json& decision, std::string& reason) {
  const std::int64_t job_id = job.id, agent_id = agent.id;
  const int attempt = job.attempts + 1;
  reason = "leased to agent " + str(agent_id) + " (" + agent.name + "), attempt " +
           std::to_string(attempt) + " of " + std::to_string(job.max_attempts);
  // One statement: the next fencing token, the run, the job taking it (its attempt and its
  // leased state), the agent, and the job's events as one row (migration 10): the decision
  // (when there is one), lease.granted (its data: the run and token the server just made,
  // then the rest as the client wrote it) and job.state, with consecutive ids and seqs.
  const std::string rest = dump_json({{"agent_id", agent_id},
                                      {"attempt", attempt},
                                      {"host", agent.host},
                                      {"slot", agent.slot},
                                      {"host_exclusive", job.host_exclusive}});
  const std::string state_data = dump_json({{"state", to_string(JobState::leased)}, {"reason", reason}});
  std::vector<std::string_view> types, before;  // before: the decision's data, if any
  std::string decided;
  if (!decision.is_null()) {
    decided = dump_json(decision);
    types.push_back(event_type::sched_decision);
    before.push_back(decided);
  }
  types.push_back(event_type::lease_granted);
  types.push_back(event_type::job_state);
  const auto n = static_cast<std::int64_t>(types.size());
  static const std::string sql =
      "WITH t AS (UPDATE counters SET value = value + 1 WHERE name = 'fencing_token' "
      "RETURNING value), "
      "r AS (INSERT INTO runs (job_id, agent_id, attempt, fencing_token, outcome, "
      "started_ms, lease_expires_ms, host, slot, host_exclusive) "
      "SELECT ?, ?, ?, t.value, 'running', ?, ?, ?, ?, ? FROM t RETURNING id, job_id, fencing_token), "
      "j AS (UPDATE jobs SET attempts = ?, current_run_id = (SELECT id FROM r), state = 'leased', "
      "state_reason = ?, updated_ms = ? WHERE id = ?), "
      "a AS (UPDATE agents SET state = 'busy', current_run_id = (SELECT id FROM r), "
      "last_seen_ms = ? WHERE id = ?), "
      "c AS (UPDATE counters SET value = value + ? WHERE name = 'event_id' RETURNING value), "
      "e AS (INSERT INTO event_batches (last_id, first_id, job_id, run_id, min_seq, max_seq, "
      "seqs, ts_ms, types, datas) "
      "SELECT c.value, c.value - ? + 1, r.job_id, 0, s.seq, s.seq + ? - 1, "
      "ARRAY(SELECT generate_series(s.seq, s.seq + ? - 1)), array_fill(?::bigint, ARRAY[?::int]), "
      "?::text[], ?::text[] || ARRAY['{\"fencing_token\":' || r.fencing_token || "
      "',\"run_id\":' || r.id || ',' || substr(?, 2), ?] "
      "FROM c, r CROSS JOIN LATERAL (SELECT COALESCE(MAX(max_seq), 0) + 1 AS seq FROM "
      "event_batches WHERE job_id = r.job_id AND run_id = 0) s) "
      "SELECT id, fencing_token FROM r";
  auto q = db_->prepare(sql);
  q.args(job_id, agent_id, attempt, now, expires, agent.host, agent.slot,
         job.host_exclusive ? 1 : 0, attempt, reason, now, job_id, now, agent_id, n, n, n, n,
         now, n, TextArray{types}, TextArray{before}, rest, state_data);
  q.send();
  return q;
}

Result<Lease> PgStore::grant_lease(std::int64_t job_id, std::int64_t agent_id, TimeMs ttl_ms,
                                   TimeMs now, const nlohmann::json& decision,
                                   JobRecord* leased_job) {
  if (ttl_ms <= 0) return make_error(Errc::invalid_argument, "lease ttl must be positive");
  // Two round trips: the job, the agent and the runs on its host, read together with BEGIN,
  // the lock and the fencing check; then the decision's event, the grant, its lease.granted
  // event, the job's state and the COMMIT.
  return db_->transaction([&]() -> Result<Lease> {
    auto reads = send_grant_reads(job_id, agent_id);
    std::optional<JobRecord> job;
    if (reads.job.step()) job = read_job(reads.job);
    std::optional<AgentRecord> agent;
    if (reads.agent.step()) agent = read_agent(reads.agent);
    std::vector<HostRun> host_runs;
    while (reads.host.step())
      host_runs.push_back({reads.host.i64(0), reads.host.i32(1), reads.host.boolean(2)});
    if (auto refused = grant_refusal(job_id, agent_id, job, agent, host_runs)) return *refused;
    const TimeMs expires = now + ttl_ms;
    std::string reason;
    auto q = queue_grant(*job, *agent, expires, now, decision, reason);
    db_->queue_commit_now();
    if (!q.step()) throw DbError{"", "the fencing counter is missing (schema damaged?)"};
    const Lease lease{q.i64(0), job_id, agent_id, q.i64(1), expires};
    if (leased_job) *leased_job = as_leased(*job, lease, job->attempts + 1, reason, now);
    return lease;
  });
}

std::vector<Result<Store::GrantedLease>> PgStore::grant_leases(const std::vector<LeaseGrant>& grants,
                                                               TimeMs ttl_ms, TimeMs now) {
  std::vector<Result<GrantedLease>> out;
  if (grants.empty()) return out;
  if (ttl_ms <= 0) {
    for (std::size_t i = 0; i < grants.size(); ++i)
      out.push_back(make_error(Errc::invalid_argument, "lease ttl must be positive"));
    return out;
  }
  // Two round trips for the whole pass: every grant's job, agent and host runs read together
  // with BEGIN, the lock and the fencing check; then the writes of those that may go ahead and
  // the COMMIT. Each is judged after the ones before it: a job, an agent or a GPU slot taken
  // by an earlier grant of the batch is taken for the later ones too.
  const TimeMs expires = now + ttl_ms;
  auto done = db_->transaction([&]() -> Result<std::vector<Result<GrantedLease>>> {
    std::vector<GrantReads> reads;
    reads.reserve(grants.size());
    for (const auto& g : grants) reads.push_back(send_grant_reads(g.job_id, g.agent_id));
    std::vector<Result<GrantedLease>> results;
    std::vector<std::optional<Stmt>> granted(grants.size());
    std::vector<JobRecord> jobs(grants.size());
    std::vector<std::string> reasons(grants.size());
    std::unordered_set<std::int64_t> taken_jobs, taken_agents;
    std::map<std::string, std::vector<HostRun>> taken_slots;  // host -> leases granted above
    for (std::size_t i = 0; i < grants.size(); ++i) {
      const auto& g = grants[i];
      std::optional<JobRecord> job;
      if (reads[i].job.step()) job = read_job(reads[i].job);
      std::optional<AgentRecord> agent;
      if (reads[i].agent.step()) agent = read_agent(reads[i].agent);
      std::vector<HostRun> host_runs;
      while (reads[i].host.step())
        host_runs.push_back({reads[i].host.i64(0), reads[i].host.i32(1), reads[i].host.boolean(2)});
      // What the grants above changed, as a read after them would see it.
      if (job && taken_jobs.count(job->id)) job->state = JobState::leased;
      if (agent && taken_agents.count(agent->id)) agent->state = AgentState::busy;
      if (agent)
        if (auto it = taken_slots.find(agent->host); it != taken_slots.end())
          host_runs.insert(host_runs.end(), it->second.begin(), it->second.end());
      if (auto refused = grant_refusal(g.job_id, g.agent_id, job, agent, host_runs)) {
        results.push_back(*refused);
        continue;
      }
      granted[i].emplace(queue_grant(*job, *agent, expires, now, g.decision, reasons[i]));
      jobs[i] = std::move(*job);
      taken_jobs.insert(g.job_id);
      taken_agents.insert(g.agent_id);
      // Its run's id is the server's: 0 stands for "a lease granted above" in a refusal.
      taken_slots[agent->host].push_back({0, agent->slot, jobs[i].host_exclusive});
      results.push_back(GrantedLease{});
    }
    db_->queue_commit_now();
    for (std::size_t i = 0; i < grants.size(); ++i) {
      if (!granted[i]) continue;
      Stmt& q = *granted[i];
      if (!q.step()) throw DbError{"", "the fencing counter is missing (schema damaged?)"};
      const Lease lease{q.i64(0), grants[i].job_id, grants[i].agent_id, q.i64(1), expires};
      const int attempt = jobs[i].attempts + 1;
      results[i] = GrantedLease{lease, as_leased(std::move(jobs[i]), lease, attempt, reasons[i], now)};
    }
    return results;
  });
  if (!done) {
    for (std::size_t i = 0; i < grants.size(); ++i) out.push_back(done.error());
    return out;
  }
  return std::move(*done);
}

Result<IngestResult> PgStore::append_run_events(std::int64_t run_id,
                                                   std::int64_t fencing_token,
                                                   const std::vector<Event>& events, TimeMs now,
                                                   std::int64_t agent_id) {
  for (const auto& e : events) {
    if (e.seq < 1) {
      return make_error(Errc::invalid_argument, "event seq " + str(e.seq) + " of run " +
                                                    str(run_id) + " must be >= 1");
    }
    if (e.type.empty())
      return make_error(Errc::invalid_argument, "event seq " + str(e.seq) + " has no type");
    if (e.type.find('\0') != std::string::npos) {
      return make_error(Errc::invalid_argument,
                        "event seq " + str(e.seq) + " has a NUL character in its type");
    }
  }
  // Two round trips, whatever the batch's size: the run (its fencing token, stage and job),
  // the batch's seqs already stored, the highest seq stored and the job, read together with
  // BEGIN, the lock and the fencing check; then the new events, the run's stage, the job's
  // state, the run's watermark and the COMMIT.
  static const std::string run_sql =
      std::string("SELECT ") + kRunColumns + ", stage_seq FROM runs WHERE id = ?";
  static const std::string job_sql = std::string("SELECT ") + kJobColumns +
                                     " FROM jobs WHERE id = (SELECT job_id FROM runs WHERE id = ?)";
  return db_->transaction([&]() -> Result<IngestResult> {
    auto run_q = db_->prepare(run_sql);
    run_q.args(run_id).send();
    auto job_q = db_->prepare(job_sql);
    job_q.args(run_id).send();
    IngestResult res;
    std::int64_t stage_seq = 0;
    RunRecord run;
    std::string last_stage;
    JobState furthest = JobState::queued;
    // Which of the batch's seqs are stored already: only the run's stored batches whose seq
    // range meets this one's are opened. And the highest seq the run has stored, for the
    // watermark below.
    std::vector<std::int64_t> stored;  // sorted below
    std::int64_t stored_max = 0;
    {
      std::vector<std::int64_t> all;
      all.reserve(events.size());
      std::int64_t lo = INT64_MAX, hi = 0;
      for (const auto& e : events) {
        all.push_back(e.seq);
        lo = std::min(lo, e.seq);
        hi = std::max(hi, e.seq);
      }
      auto q = db_->prepare(
          "SELECT u.seq FROM event_batches b, unnest(b.seqs) AS u(seq) WHERE "
          "b.job_id = (SELECT job_id FROM runs WHERE id = ?) AND b.run_id = ? AND "
          "b.max_seq >= ? AND b.min_seq <= ? AND u.seq = ANY(?::bigint[])");
      q.args(run_id, run_id, lo, hi, Int8Array{all});
      q.send();
      auto max_q = db_->prepare(
          "SELECT COALESCE(MAX(max_seq), 0) FROM event_batches WHERE "
          "job_id = (SELECT job_id FROM runs WHERE id = ?) AND run_id = ?");
      max_q.args(run_id, run_id).send();
      std::optional<RunRecord> loaded;
      if (run_q.step()) {
        loaded = read_run(run_q);
        stage_seq = run_q.i64(16);  // after read_run's 16 columns
      }
      auto fenced = check_fenced(loaded, run_id, fencing_token, agent_id);
      if (!fenced) return fenced.error();
      run = *fenced;
      while (q.step()) stored.push_back(q.i64(0));
      if (max_q.step()) stored_max = max_q.i64(0);
    }
    // An event is a duplicate when its seq is stored or came earlier in the batch (the first
    // copy wins): the batch's (seq, place) pairs sorted, without a node per seq.
    std::sort(stored.begin(), stored.end());
    std::vector<bool> dup(events.size());
    {
      std::vector<std::pair<std::int64_t, std::size_t>> order;
      order.reserve(events.size());
      for (std::size_t i = 0; i < events.size(); ++i) order.emplace_back(events[i].seq, i);
      std::sort(order.begin(), order.end());
      for (std::size_t k = 0; k < order.size(); ++k) {
        dup[order[k].second] = (k > 0 && order[k - 1].first == order[k].first) ||
                               std::binary_search(stored.begin(), stored.end(), order[k].first);
      }
    }
    std::vector<std::int64_t> seqs, tss;
    std::vector<std::string_view> types, datas;  // views of events' own strings, or of dumped
    std::vector<std::string> dumped;
    dumped.reserve(events.size());  // never reallocated: datas point into it
    seqs.reserve(events.size());
    tss.reserve(events.size());
    types.reserve(events.size());
    datas.reserve(events.size());
    for (std::size_t i = 0; i < events.size(); ++i) {
      const Event& e = events[i];
      if (dup[i]) {
        ++res.duplicates;
        continue;
      }
      ++res.accepted;
      seqs.push_back(e.seq);
      tss.push_back(e.ts_ms ? e.ts_ms : now);
      types.push_back(e.type);
      if (!e.data_text.empty()) {
        datas.push_back(e.data_text);
      } else {
        dumped.push_back(e.data.is_null() ? std::string("{}") : dump_json(e.data));
        datas.push_back(dumped.back());
      }
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
      // The new events are one row (migration 10), numbered from the counters row in batch
      // order: ids stay gap-free and follow the batch, as with SQLite.
      const auto n = static_cast<std::int64_t>(seqs.size());
      const auto [lo, hi] = std::minmax_element(seqs.begin(), seqs.end());
      db_->prepare(
             "WITH c AS (UPDATE counters SET value = value + ? WHERE name = 'event_id' "
             "RETURNING value) "
             "INSERT INTO event_batches (last_id, first_id, job_id, run_id, min_seq, max_seq, "
             "seqs, ts_ms, types, datas) "
             "SELECT c.value, c.value - ? + 1, r.job_id, r.id, ?, ?, ?::bigint[], ?::bigint[], "
             "?::text[], ?::text[] FROM c, (SELECT id, job_id FROM runs WHERE id = ?) r")
          .args(n, n, *lo, *hi, Int8Array{seqs}, Int8Array{tss}, TextArray{types},
                TextArray{datas}, run_id)
          .run();
    }
    if (!last_stage.empty()) {
      db_->prepare("UPDATE runs SET stage = ?, stage_seq = ? WHERE id = ?")
          .args(last_stage, stage_seq, run_id)
          .run();
    }
    if (progress(furthest) > 0) {
      // The job as it was read first: this batch changes only its state, here.
      std::optional<JobRecord> job;
      if (job_q.step()) job = read_job(job_q);
      if (job && job->current_run_id == run_id && is_active(job->state) &&
          progress(furthest) > progress(job->state)) {
        write_job_state(job->id, furthest, std::string("agent ") + str(run.agent_id) +
                                               " reached the " + to_string(furthest) + " stage",
                        now);
      }
    }
    // The watermark: how far the stored seqs above it run on without a gap; stored on the
    // run by the last statement of the call, with which the COMMIT goes. Every seq up to it
    // is stored, so a new seq is above it. When nothing was stored above it before this batch
    // (an agent that uploads in order), it moves on by this batch's run of seqs from
    // watermark + 1, counted here; otherwise the server counts the stored seqs above it
    // (seq = watermark + rank holds exactly for the gap-free prefix).
    const std::int64_t c = run.events_contiguous;
    std::optional<Stmt> q;
    if (stored_max <= c) {
      std::sort(seqs.begin(), seqs.end());
      std::int64_t w = c;
      for (std::int64_t s : seqs) {
        if (s != w + 1) break;
        w = s;
      }
      q.emplace(db_->prepare(
          "UPDATE runs SET events_contiguous = ? WHERE id = ? RETURNING events_contiguous"));
      q->args(w, run_id);
    } else {
      q.emplace(db_->prepare(
          "UPDATE runs SET events_contiguous = (SELECT ? + count(*) FROM (SELECT u.seq, "
          "row_number() OVER (ORDER BY u.seq) AS rn FROM event_batches b, unnest(b.seqs) AS "
          "u(seq) WHERE b.job_id = ? AND b.run_id = ? AND b.max_seq > ? AND u.seq > ?) t "
          "WHERE seq = ? + rn) WHERE id = ? RETURNING events_contiguous"));
      q->args(c, run.job_id, run_id, c, c, c, run_id);
    }
    db_->commit_with_next_read();
    res.contiguous = q->step() ? q->i64(0) : c;
    return res;
  });
}

}  // namespace kfleet::store::pg
