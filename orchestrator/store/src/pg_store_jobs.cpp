// Jobs: submission, queries and state changes. The code is shared/jobs.inc, which both backends
// compile; what PostgreSQL does differently is below it.
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pg_store.hpp"
#include "shared/in_flight_sql.hpp"
#include "shared/lease_rules.hpp"

namespace kfleet::store::pg {

#include "shared/jobs.inc"

namespace {

// The submission's checks and its bundle, the head of both statements below: `a` carries the
// bundle once (its body is compared and inserted from there); `go` is the checks.
// Placeholders: the body, its hash, whether there is one; reuse_identical and the content
// hash; the in-flight limit, the token and the limit again.
std::string submit_head() {
  return std::string(
             "WITH a AS (SELECT ?::bytea AS body, ?::text AS hash, ?::bigint AS has_body), "
             "old AS (SELECT b.body = a.body AS same FROM bundles b, a "
             "WHERE a.has_body = 1 AND b.hash = a.hash), "
             "go AS (SELECT (? = 0 OR NOT EXISTS (SELECT 1 FROM (SELECT state") +
         kNewestWithHash + ") d WHERE d." + kAnswersForIdenticalSql + ")) AND (? = 0 OR (" +
         kInFlightSql + ") < ?) AND NOT EXISTS (SELECT 1 FROM old WHERE NOT same) AS ok), "
         "b AS (INSERT INTO bundles (hash, body, size) SELECT a.hash, a.body, length(a.body) "
         "FROM a, go WHERE go.ok AND a.has_body = 1 AND NOT EXISTS (SELECT 1 FROM old)), ";
}

// What the lease rules read of a job (lease_rules_sql), for a job being submitted: it has no
// row yet, so the values it is inserted with. Placeholders: max_attempts, then host_exclusive
// (in the order the rules name them).
std::string new_job_column(std::string_view column) {
  if (column == "state") return "'queued'";
  if (column == "attempts") return "0";
  if (column == "max_attempts" || column == "host_exclusive") return "?::bigint";
  throw std::logic_error("the submit with a lease has no value for the job's " +
                         std::string(column) + " (shared/lease_rules.hpp)");
}

// The job's columns as both statements insert them, the values from name to content_hash.
const char* const kJobInsertColumns =
    "INSERT INTO jobs (name, campaign, parent, priority, gpu, regions, spec, spec_yaml, "
    "source_name, bundle_hash, content_hash, state, state_reason, attempts, max_attempts, "
    "current_run_id, submitted_by, created_ms, updated_ms, simulated, host_exclusive, "
    "token_key, language";

}  // namespace

// submit_job inside its transaction, in one round trip: BEGIN, the lock and the fencing
// check, the checks' reads, one statement that writes the bundle and the job only if the
// checks allow it (with the lease planned for the job, Submission::grant, when there is one:
// send_submit_granted), the COMMIT, and the fleet view when a pass waits for it
// (read_fleet_view_with_next_commit). The statement repeats the checks in the server, under
// the same write lock, so it writes exactly when the reads say the submission is new: the
// reads then say why nothing was written (an identical job, the token's limit), and when they
// do not, the bundle's stored body differed from this one.
Result<Submitted> PgStore::submit_checked(const Submission& s, const nlohmann::json& submitted,
                                          TimeMs now) {
  const bool granting = s.grant && s.grant->ttl_ms > 0;
  auto checks = send_submit_checks(s);
  Stmt q = granting ? send_submit_granted(s, submitted, now) : send_submit(s, submitted, now);
  db_->queue_commit_now();
  Submitted out;
  const bool answered = receive_submit_checks(checks, s, out);
  const bool written = q.step();
  if (written && answered)  // a defect in the statement above, never a refusal to retry
    throw std::logic_error("the submission's checks and its guarded insert disagree: job " +
                           std::to_string(q.i64(0)) + " was written all the same");
  if (written) {
    out.job = read_job(q);  // with a grant, then the run's id and fencing token (NULL: none)
    if (granting && !q.is_null(kJobColumnCount)) {
      out.lease = Lease{q.i64(kJobColumnCount), out.job.id, s.grant->agent_id,
                        q.i64(kJobColumnCount + 1), now + s.grant->ttl_ms};
    }
    return out;
  }
  if (answered) return out;
  return bundle_clash(s.job.bundle_hash);
}

// The submission's statement without a lease: the job queued.
Stmt PgStore::send_submit(const Submission& s, const nlohmann::json& submitted, TimeMs now) {
  // The counter is taken only when a job is inserted (event ids stay gap-free).
  static const std::string sql =
      submit_head() + "j AS (" + kJobInsertColumns +
      ") SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', '', 0, ?, "
      "0, ?, ?, ?, 0, ?, ?, ? FROM go WHERE go.ok RETURNING " +
      kJobColumns +
      "), o AS (INSERT INTO job_origins (job_id, token_key, parent_job_id, change) "
      "SELECT j.id, ?, ?, ? FROM j WHERE ? = 1), "
      "c AS (UPDATE counters SET value = value + 1 WHERE name = 'event_id' "
      "AND EXISTS (SELECT 1 FROM j) RETURNING value), "
      "e AS (" + job_event_insert("j.id", "c, j") + ") SELECT * FROM j";
  const NewJob& j = s.job;
  const bool reuse = s.reuse_identical && !j.content_hash.empty();
  const int limit = s.in_flight_limit > 0 && !j.token_key.empty() ? s.in_flight_limit : 0;
  const bool origin = !j.token_key.empty() || j.parent_job_id != 0;
  auto q = db_->prepare(sql);
  q.args(Blob{s.bundle_body}, j.bundle_hash, s.bundle_body.empty() ? 0 : 1, reuse ? 1 : 0,
         j.content_hash, limit, j.token_key, limit, j.name, j.campaign, j.parent, j.priority,
         j.gpu, dump_json(nlohmann::json(j.regions)), dump_json(j.spec), j.spec_yaml,
         j.source_name, j.bundle_hash, j.content_hash, j.max_attempts, j.submitted_by, now, now,
         j.host_exclusive ? 1 : 0, j.token_key, job_language(j), j.token_key, j.parent_job_id,
         dump_json(j.change),
         origin ? 1 : 0, now, event_type::job_submitted, dump_json(submitted));
  q.send();
  return q;
}

// A submission with its lease (Submission::grant) as one statement, which writes the job as
// the grant leaves it: leased, attempt 1, its run, in one row version, and its events
// (job.submitted, the decision when there is one, lease.granted and job.state, consecutive
// ids and seqs 1..n) as one row. The lease is judged by grant_lease's rules (lease_rules_sql),
// in the server, against the rows as this transaction sees them: the agent idle and holding no
// run, and the slot rules on its host (also unique indexes); a new job is pending with every
// attempt left. Refused, the job is written queued with its job.submitted event alone,
// as send_submit writes it. The job's id is taken first (nextval), so that its run and
// the job can name each other in one statement; the foreign keys are checked at its end.
// Its row: the job, then the run's id and fencing token (NULL: no lease).
Stmt PgStore::send_submit_granted(const Submission& s, const nlohmann::json& submitted,
                                  TimeMs now) {
  static const std::string sql =
      submit_head() +
      // The job's id, and the agent when the lease rules let it take the job.
      "g AS (SELECT nextval('jobs_id_seq') AS id, ag.id AS agent_id, "
      "ag.name AS agent_name, ag.host, ag.slot FROM go LEFT JOIN agents ag ON ag.id = ?::bigint "
      "AND " + lease_rules_sql(new_job_column, "ag") + " WHERE go.ok), "
      "t AS (UPDATE counters SET value = value + 1 WHERE name = 'fencing_token' "
      "AND EXISTS (SELECT 1 FROM g WHERE g.agent_id IS NOT NULL) RETURNING value), "
      "r AS (INSERT INTO runs (job_id, agent_id, attempt, fencing_token, outcome, started_ms, "
      "lease_expires_ms, host, slot, host_exclusive) SELECT g.id, g.agent_id, 1, t.value, "
      "'running', ?, ?, g.host, g.slot, ? FROM g, t RETURNING id, fencing_token), "
      "w AS (SELECT r.id AS run_id, r.fencing_token, g.agent_id, g.host, g.slot, "
      "'leased to agent ' || g.agent_id || ' (' || g.agent_name || '), attempt 1 of ' || "
      "?::bigint AS reason FROM g, r), "
      "j AS (" + kJobInsertColumns +
      ", id) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
      "CASE WHEN w.run_id IS NULL THEN 'queued' ELSE 'leased' END, COALESCE(w.reason, ''), "
      "CASE WHEN w.run_id IS NULL THEN 0 ELSE 1 END, ?, COALESCE(w.run_id, 0), ?, ?, ?, 0, ?, ?, "
      "?, g.id FROM g LEFT JOIN w ON TRUE RETURNING " +
      kJobColumns +
      "), o AS (INSERT INTO job_origins (job_id, token_key, parent_job_id, change) "
      "SELECT j.id, ?, ?, ? FROM j WHERE ? = 1), "
      "u AS (UPDATE agents SET state = 'busy', current_run_id = w.run_id, last_seen_ms = ? "
      "FROM w WHERE agents.id = w.agent_id), "
      // The events: n of them with the lease, else job.submitted alone.
      "k AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM w) THEN ?::int ELSE 1 END AS n), "
      "c AS (UPDATE counters SET value = value + (SELECT n FROM k) WHERE name = 'event_id' "
      "AND EXISTS (SELECT 1 FROM j) RETURNING value), "
      "e AS (INSERT INTO event_batches (last_id, first_id, job_id, run_id, min_seq, max_seq, "
      "seqs, ts_ms, types, datas) "
      "SELECT c.value, c.value - k.n + 1, j.id, 0, 1, k.n, ARRAY(SELECT generate_series(1, k.n)), "
      "array_fill(?::bigint, ARRAY[k.n]), (?::text[])[1:k.n], "
      "CASE WHEN w.run_id IS NULL THEN (?::text[])[1:1] ELSE ?::text[] || ARRAY["
      "'{\"agent_id\":' || w.agent_id || ',\"attempt\":1,\"fencing_token\":' || "
      "w.fencing_token || ',\"host\":' || to_json(w.host)::text || ',\"host_exclusive\":' || "
      "CASE WHEN ?::bigint <> 0 THEN 'true' ELSE 'false' END || ',\"run_id\":' || w.run_id || "
      "',\"slot\":' || w.slot || '}', "
      "'{\"reason\":' || to_json(w.reason)::text || ',\"state\":\"leased\"}'] END "
      "FROM c, k, j LEFT JOIN w ON TRUE) "
      "SELECT j.*, w.run_id, w.fencing_token FROM j LEFT JOIN w ON TRUE";
  const NewJob& j = s.job;
  const Submission::Grant& grant = *s.grant;
  const bool reuse = s.reuse_identical && !j.content_hash.empty();
  const int limit = s.in_flight_limit > 0 && !j.token_key.empty() ? s.in_flight_limit : 0;
  const bool origin = !j.token_key.empty() || j.parent_job_id != 0;
  const int exclusive = j.host_exclusive ? 1 : 0;
  const TimeMs expires = now + grant.ttl_ms;
  // The events' types and the data known before the statement: job.submitted's, then the
  // decision's when there is one; lease.granted's and job.state's are made in the server.
  const std::string submitted_data = dump_json(submitted), decided = dump_json(grant.decision);
  std::vector<std::string_view> types{event_type::job_submitted}, datas{submitted_data};
  if (!grant.decision.is_null()) {
    types.push_back(event_type::sched_decision);
    datas.push_back(decided);
  }
  types.push_back(event_type::lease_granted);
  types.push_back(event_type::job_state);
  auto q = db_->prepare(sql);
  q.args(Blob{s.bundle_body}, j.bundle_hash, s.bundle_body.empty() ? 0 : 1, reuse ? 1 : 0,
         j.content_hash, limit, j.token_key, limit,
         // g, r and w
         grant.agent_id, j.max_attempts, exclusive, now, expires, exclusive, j.max_attempts,
         // j
         j.name, j.campaign, j.parent, j.priority, j.gpu, dump_json(nlohmann::json(j.regions)),
         dump_json(j.spec), j.spec_yaml, j.source_name, j.bundle_hash, j.content_hash,
         j.max_attempts, j.submitted_by, now, now, exclusive, j.token_key, job_language(j),
         // o, u, k and e
         j.token_key, j.parent_job_id, dump_json(j.change), origin ? 1 : 0, now,
         static_cast<std::int64_t>(types.size()), now, TextArray{types}, TextArray{datas},
         TextArray{datas}, exclusive);
  q.send();
  return q;
}

}  // namespace kfleet::store::pg
