// Leases and runs: granting and event ingestion, which differ by backend; the stage order,
// renewal, finishing, hand-off, expiry and the run queries are shared/runs.inc.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "pg_store.hpp"
#include "shared/lease_rules.hpp"

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

namespace {

// kJobColumns, each as jobs.<column>: an UPDATE ... FROM's RETURNING, where the other tables
// have columns of the same names.
std::string qualified_job_columns() {
  std::string out, col;
  for (const char* c = kJobColumns;; ++c) {
    if (*c == ',' || *c == 0) {
      if (!out.empty()) out += ", ";
      out += "jobs." + col;
      col.clear();
      if (*c == 0) break;
    } else if (*c != ' ') {
      col += *c;
    }
  }
  return out;
}

}  // namespace

Stmt PgStore::send_grant(const LeaseGrant& g, TimeMs expires, TimeMs now) {
  // One statement, which writes nothing unless the lease rules allow it (lease_rules_sql),
  // checked in the server against the rows as the statements before it left them: the job
  // pending with an attempt left, the agent idle and holding no run, and the slot rules on the
  // agent's host (also unique indexes). Then the next fencing token, the run, the job
  // (its attempt, its run and its leased state in one row version), the agent, and the job's
  // events as one row (migration 10): the decision (when there is one), lease.granted and
  // job.state, with consecutive ids and seqs. Its row: the job as the grant left it, then the
  // run's id and fencing token; no row when the grant is refused.
  static const std::string sql =
      "WITH ok AS (SELECT j.id, j.attempts + 1 AS attempt, j.max_attempts, j.host_exclusive, "
      "a.name AS agent_name, a.host, a.slot FROM jobs j, agents a "
      "WHERE j.id = ? AND a.id = ? AND " +
      lease_rules_sql([](std::string_view column) { return "j." + std::string(column); }, "a") +
      "), "
      "w AS (SELECT ok.*, 'leased to agent ' || ?::bigint || ' (' || ok.agent_name || "
      "'), attempt ' || ok.attempt || ' of ' || ok.max_attempts AS reason FROM ok), "
      "t AS (UPDATE counters SET value = value + 1 WHERE name = 'fencing_token' "
      "AND EXISTS (SELECT 1 FROM ok) RETURNING value), "
      "r AS (INSERT INTO runs (job_id, agent_id, attempt, fencing_token, outcome, "
      "started_ms, lease_expires_ms, host, slot, host_exclusive) "
      "SELECT w.id, ?, w.attempt, t.value, 'running', ?, ?, w.host, w.slot, w.host_exclusive "
      "FROM w, t RETURNING id, job_id, fencing_token), "
      "j AS (UPDATE jobs SET attempts = w.attempt, current_run_id = r.id, state = 'leased', "
      "state_reason = w.reason, updated_ms = ? FROM w, r WHERE jobs.id = r.job_id RETURNING " +
      qualified_job_columns() +
      "), "
      "a AS (UPDATE agents SET state = 'busy', current_run_id = r.id, last_seen_ms = ? "
      "FROM r WHERE agents.id = ?), "
      "c AS (UPDATE counters SET value = value + ? WHERE name = 'event_id' "
      "AND EXISTS (SELECT 1 FROM ok) RETURNING value), "
      "e AS (INSERT INTO event_batches (last_id, first_id, job_id, run_id, min_seq, max_seq, "
      "seqs, ts_ms, types, datas) "
      "SELECT c.value, c.value - ? + 1, r.job_id, 0, s.seq, s.seq + ? - 1, "
      "ARRAY(SELECT generate_series(s.seq, s.seq + ? - 1)), array_fill(?::bigint, ARRAY[?::int]), "
      "?::text[], ?::text[] || ARRAY["
      "'{\"agent_id\":' || ?::bigint || ',\"attempt\":' || w.attempt || ',\"fencing_token\":' || "
      "r.fencing_token || ',\"host\":' || to_json(w.host)::text || ',\"host_exclusive\":' || "
      "CASE WHEN w.host_exclusive <> 0 THEN 'true' ELSE 'false' END || ',\"run_id\":' || r.id || "
      "',\"slot\":' || w.slot || '}', "
      "'{\"reason\":' || to_json(w.reason)::text || ',\"state\":\"leased\"}'] "
      "FROM c, r, w CROSS JOIN LATERAL (SELECT COALESCE(MAX(max_seq), 0) + 1 AS seq FROM "
      "event_batches WHERE job_id = r.job_id AND run_id = 0) s) "
      "SELECT j.*, r.id, r.fencing_token FROM j, r";
  std::vector<std::string_view> types, before;  // before: the decision's data, if any
  std::string decided;
  if (!g.decision.is_null()) {
    decided = dump_json(g.decision);
    types.push_back(event_type::sched_decision);
    before.push_back(decided);
  }
  types.push_back(event_type::lease_granted);
  types.push_back(event_type::job_state);
  const auto n = static_cast<std::int64_t>(types.size());
  auto q = db_->prepare(sql);
  q.args(g.job_id, g.agent_id, g.agent_id, g.agent_id, now, expires, now, now, g.agent_id, n, n,
         n, n, now, n, TextArray{types}, TextArray{before}, g.agent_id);
  q.send();
  return q;
}

Store::GrantedLease PgStore::read_grant(const Stmt& q, std::int64_t agent_id, TimeMs expires) {
  JobRecord job = read_job(q);  // then the run's id and fencing token
  const Lease lease{q.i64(kJobColumnCount), job.id, agent_id, q.i64(kJobColumnCount + 1), expires};
  return GrantedLease{lease, std::move(job)};
}

Error PgStore::explain_refused_grant(const LeaseGrant& g) {
  // The refused grant's rows as they are now, read together in one round trip.
  return db_->pipelined_reads([&]() -> Error {
    auto reads = send_grant_reads(g.job_id, g.agent_id);
    std::optional<JobRecord> job;
    if (reads.job.step()) job = read_job(reads.job);
    std::optional<AgentRecord> agent;
    if (reads.agent.step()) agent = read_agent(reads.agent);
    std::vector<HostRun> host_runs;
    while (reads.host.step())
      host_runs.push_back({reads.host.i64(0), reads.host.i32(1), reads.host.boolean(2)});
    if (auto refused = lease_refusal(g.job_id, g.agent_id, job, agent)) return *refused;
    if (auto refused = slot_refusal(g.job_id, *job, *agent, host_runs)) return *refused;
    // Free again by now: what took it was a grant before it in the same pass.
    return make_error(Errc::conflict, "job " + str(g.job_id) + " could not go to agent " +
                                          str(g.agent_id) +
                                          ": an earlier grant of the same pass took the job, the "
                                          "agent or its GPU slot");
  });
}

Result<FinishedRun> PgStore::finish_agent_run(std::int64_t agent_id, std::int64_t run_id,
                                              std::int64_t fencing_token, const Verdict& v,
                                              TimeMs now, const AmendVerdict& amend) {
  // An amendment needs the job before the verdict is written: two round trips. The control
  // plane amends by itself the runs it leased (it read their jobs then).
  if (amend) return finish_reading_first(agent_id, run_id, fencing_token, v, now, amend);
  return std::move(finish_agent_runs({FinishCall{agent_id, run_id, fencing_token, v}}, now).front());
}

namespace {

// The terminal job states as an SQL list: ('passed', ...).
std::string terminal_states_sql() {
  std::string out;
  for (int i = 0; i <= static_cast<int>(JobState::cancelled); ++i) {
    const auto s = static_cast<JobState>(i);
    if (!is_terminal(s)) continue;
    out += (out.empty() ? "('" : ", '") + std::string(to_string(s)) + "'";
  }
  return out + ")";
}

std::size_t column_count(const char* columns) {
  return static_cast<std::size_t>(std::count(columns, columns + std::strlen(columns), ',')) + 1;
}

// A finish's write of its job, in both statements that make one (finish_job_row's, and
// send_finish's for the finishes gathered together): the CTE `u`, which gives the job that
// `pick` finds (the UPDATE's FROM and WHERE) its final state and reason, its verdict and no
// run, in one row version, and returns its id. Its parameters: the state, the reason,
// updated_ms, the verdict, simulated, then pick's. The job.state event of that state
// (finished_job_event) goes with it: job_event_insert("u.id", ...).
std::string finished_job_update(const std::string& pick) {
  return "u AS (UPDATE jobs SET state = ?, state_reason = ?, updated_ms = ?, verdict = ?, "
         "simulated = ?, current_run_id = 0 " + pick + " RETURNING jobs.id)";
}

// The data of that job.state event.
std::string finished_job_event(JobState s, const std::string& reason) {
  return dump_json({{"state", to_string(s)}, {"reason", reason}});
}

}  // namespace

void PgStore::finish_job_row(std::int64_t job_id, const std::string& verdict, bool simulated,
                             JobState s, const std::string& reason, TimeMs now) {
  // write_job_state's statement with the verdict in the same row version.
  static const std::string sql =
      "WITH " + finished_job_update("WHERE id = ?") + ", "
      "c AS (UPDATE counters SET value = value + 1 WHERE name = 'event_id' RETURNING value) " +
      job_event_insert("u.id", "c LEFT JOIN u ON TRUE");
  db_->prepare(sql)
      .args(to_string(s), reason, now, verdict, simulated, job_id, now, event_type::job_state,
            finished_job_event(s, reason))
      .run();
}

struct PgStore::SentFinish {
  FinishReads reads;
  Stmt write;
  std::int64_t agent_id, run_id, fencing_token;
  bool simulated;
  JobState job_state;
  std::string reason;
};

PgStore::SentFinish PgStore::send_finish(const FinishCall& c, JobState job_state, TimeMs now) {
  // The reads (which word a refusal as finish_reading_first's check_fenced does) and one
  // statement for every write. The statement writes nothing unless the run is running, the
  // agent's (agent 0: anyone's) and under this fencing token, checked in the server: the
  // run's outcome; its job's verdict, state and job.state event when the job is still this
  // run's and not ended; the agent idle again if it still holds the run. Its row: the run as
  // finished, then whether the job was finished.
  static const std::string sql =
      std::string("WITH r AS (UPDATE runs SET outcome = ?, finished_ms = ?, verdict = ?, "
                  "simulated = ? WHERE id = ? AND (?::bigint = 0 OR agent_id = ?) AND "
                  "fencing_token = ? AND outcome = 'running' RETURNING ") +
      kRunColumns + "), " +
      finished_job_update("FROM r WHERE jobs.id = r.job_id AND jobs.current_run_id = r.id AND "
                          "jobs.state NOT IN " + terminal_states_sql()) +
      ", a AS (UPDATE agents SET state = CASE WHEN agents.state = 'busy' THEN 'idle' ELSE "
      "agents.state END, current_run_id = 0, last_seen_ms = GREATEST(agents.last_seen_ms, ?) "
      "FROM r WHERE agents.id = r.agent_id AND agents.current_run_id = r.id), "
      "c AS (UPDATE counters SET value = value + 1 WHERE name = 'event_id' "
      "AND EXISTS (SELECT 1 FROM u) RETURNING value), "
      "e AS (" + job_event_insert("u.id", "c, u") + ") "
      "SELECT r.*, (SELECT count(*) FROM u) FROM r";
  const Verdict& v = c.verdict;
  const std::string verdict = dump_json(to_json(v));
  std::string reason = v.reason.empty() ? std::string(to_string(v.outcome)) : v.reason;
  auto reads = send_finish_reads(*db_, c.run_id);
  auto w = db_->prepare(sql);
  w.args(to_string(v.outcome), now, verdict, v.simulated, c.run_id, c.agent_id, c.agent_id,
         c.fencing_token, to_string(job_state), reason, now, verdict, v.simulated, now, now,
         event_type::job_state, finished_job_event(job_state, reason));
  w.send();
  return SentFinish{std::move(reads), std::move(w), c.agent_id, c.run_id, c.fencing_token,
                    v.simulated, job_state, std::move(reason)};
}

Result<FinishedRun> PgStore::receive_finish(SentFinish& s, TimeMs now) {
  static const int finished_col = static_cast<int>(column_count(kRunColumns));
  std::optional<RunRecord> loaded;
  FinishedRun out;
  s.reads.receive(out, loaded);
  // Refused: the statement's guard is the same check, so it wrote nothing.
  if (auto run = check_fenced(loaded, s.run_id, s.fencing_token, s.agent_id); !run)
    return run.error();
  if (!s.write.step())
    return make_error(Errc::internal, "run " + str(s.run_id) +
                                          " passed the finish's checks but its update "
                                          "changed nothing");
  out.run = read_run(s.write);
  if (s.write.i64(finished_col) != 0 && out.job)
    apply_finish(*out.job, out.run, s.simulated, s.job_state, s.reason, now);
  return out;
}

std::vector<Result<FinishedRun>> PgStore::finish_agent_runs(const std::vector<FinishCall>& calls,
                                                            TimeMs now) {
  // BEGIN, the lock and the fencing check, every finish's reads and writes, and the COMMIT:
  // one round trip and one commit however many runs end. Each write is guarded by its own
  // checks, so a refused finish writes nothing and the others still commit.
  std::vector<Result<FinishedRun>> out;
  out.reserve(calls.size());
  std::vector<std::size_t> sendable;
  std::vector<JobState> states;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    auto st = finished_job_state(calls[i].verdict);
    out.push_back(st ? make_error(Errc::internal, "not finished") : st.error());
    if (st) {
      sendable.push_back(i);
      states.push_back(*st);
    }
  }
  if (sendable.empty()) return out;
  auto done = db_->transaction([&]() -> Result<std::vector<Result<FinishedRun>>> {
    std::vector<SentFinish> sent;
    sent.reserve(sendable.size());  // never reallocated: the queue points at their statements
    for (std::size_t k = 0; k < sendable.size(); ++k)
      sent.push_back(send_finish(calls[sendable[k]], states[k], now));
    db_->queue_commit_now();
    std::vector<Result<FinishedRun>> results;
    for (auto& s : sent) results.push_back(receive_finish(s, now));
    return results;
  });
  for (std::size_t k = 0; k < sendable.size(); ++k)
    out[sendable[k]] = done ? std::move((*done)[k]) : Result<FinishedRun>(done.error());
  return out;
}

Result<Lease> PgStore::grant_lease(std::int64_t job_id, std::int64_t agent_id, TimeMs ttl_ms,
                                   TimeMs now, const nlohmann::json& decision,
                                   JobRecord* leased_job) {
  auto r = grant_leases({LeaseGrant{job_id, agent_id, decision}}, ttl_ms, now);
  if (!r.front()) return r.front().error();
  if (leased_job) *leased_job = r.front()->job;
  return r.front()->lease;
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
  // One round trip for the whole pass: BEGIN, the lock and the fencing check, every grant's
  // statement (send_grant: the rules checked in the server, each grant after the ones before
  // it, so a job, an agent or a GPU slot taken by an earlier grant is taken for the later
  // ones), and the COMMIT. A refused grant costs one more round trip after it, to say why.
  const TimeMs expires = now + ttl_ms;
  std::vector<bool> refused(grants.size());
  auto done = db_->transaction([&]() -> Result<std::vector<Result<GrantedLease>>> {
    std::vector<Stmt> sent;
    sent.reserve(grants.size());  // never reallocated: the queue points at them
    for (const auto& g : grants) sent.push_back(send_grant(g, expires, now));
    db_->queue_commit_now();
    std::vector<Result<GrantedLease>> results;
    for (std::size_t i = 0; i < grants.size(); ++i) {
      Stmt& q = sent[i];
      if (!q.step()) {
        refused[i] = true;
        results.push_back(make_error(Errc::conflict, "refused"));  // explained below
        continue;
      }
      results.push_back(read_grant(q, grants[i].agent_id, expires));
    }
    return results;
  });
  if (!done) {
    for (std::size_t i = 0; i < grants.size(); ++i) out.push_back(done.error());
    return out;
  }
  for (std::size_t i = 0; i < grants.size(); ++i) {
    if (!refused[i]) continue;
    try {
      (*done)[i] = explain_refused_grant(grants[i]);
    } catch (const DbError& e) {
      (*done)[i] = make_error(Errc::conflict, "job " + str(grants[i].job_id) +
                                                  " was not leased; reading why failed: " +
                                                  e.message);
    }
  }
  return std::move(*done);
}

Result<IngestResult> PgStore::append_run_events(std::int64_t run_id,
                                                   std::int64_t fencing_token,
                                                   const std::vector<Event>& events, TimeMs now,
                                                   std::int64_t agent_id) {
  if (auto c = check_run_events(run_id, events); !c) return c.error();
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
    StageProgress moved;
    RunRecord run;
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
        moved.stage_seq = run_q.i64(16);  // after read_run's 16 columns
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
      moved.see(e);
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
    set_run_stage(*db_, run_id, moved.last_stage, moved.stage_seq);
    const JobState furthest = moved.furthest;
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
