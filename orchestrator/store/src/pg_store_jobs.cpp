// Jobs: submission, queries and state changes. The code is shared/jobs.inc, which both backends
// compile; what PostgreSQL does differently is below it.
#include <set>
#include <stdexcept>

#include "pg_store.hpp"
#include "shared/in_flight_sql.hpp"

namespace kfleet::store::pg {

#include "shared/jobs.inc"

// submit_job inside its transaction, in one round trip: BEGIN, the lock and the fencing
// check, the checks' reads, one statement that writes the bundle and the job only if the
// checks allow it, the lease planned for the job (Submission::grant), the COMMIT, and the
// fleet view when a pass waits for it
// (read_fleet_view_with_next_commit). The statement repeats the checks in the server, under
// the same write lock, so it writes exactly when the reads say the submission is new: the
// reads then say why nothing was written (an identical job, the token's limit), and when they
// do not, the bundle's stored body differed from this one.
Result<Submitted> PgStore::submit_checked(const Submission& s, const nlohmann::json& submitted,
                                          TimeMs now) {
  // `a` carries the bundle once (its body is compared and inserted from there); `go` is the
  // checks; the counter is taken only when a job is inserted (event ids stay gap-free).
  static const std::string sql =
      std::string(
          "WITH a AS (SELECT ?::bytea AS body, ?::text AS hash, ?::bigint AS has_body), "
          "old AS (SELECT b.body = a.body AS same FROM bundles b, a "
          "WHERE a.has_body = 1 AND b.hash = a.hash), "
          "go AS (SELECT (? = 0 OR NOT EXISTS (SELECT 1 FROM (SELECT state") +
      kNewestWithHash + ") d WHERE d." + kAnswersForIdenticalSql + ")) AND (? = 0 OR (" +
      kInFlightSql + ") < ?) AND NOT EXISTS (SELECT 1 FROM old WHERE NOT same) AS ok), "
      "b AS (INSERT INTO bundles (hash, body, size) SELECT a.hash, a.body, length(a.body) "
      "FROM a, go WHERE go.ok AND a.has_body = 1 AND NOT EXISTS (SELECT 1 FROM old)), "
      "j AS (INSERT INTO jobs (name, campaign, parent, priority, gpu, regions, spec, "
      "spec_yaml, source_name, bundle_hash, content_hash, state, state_reason, attempts, "
      "max_attempts, current_run_id, submitted_by, created_ms, updated_ms, simulated, "
      "host_exclusive, token_key) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', '', 0, ?, "
      "0, ?, ?, ?, 0, ?, ? FROM go WHERE go.ok RETURNING " +
      kJobColumns +
      "), o AS (INSERT INTO job_origins (job_id, token_key, parent_job_id, change) "
      "SELECT j.id, ?, ?, ? FROM j WHERE ? = 1), "
      "c AS (UPDATE counters SET value = value + 1 WHERE name = 'event_id' "
      "AND EXISTS (SELECT 1 FROM j) RETURNING value), "
      "e AS (" + job_event_insert("j.id", "c, j") + ") SELECT *, set_config('" +
      kSubmittedJobSetting + "', j.id::text, true) FROM j";
  const NewJob& j = s.job;
  auto checks = send_submit_checks(s);
  const bool reuse = s.reuse_identical && !j.content_hash.empty();
  const int limit = s.in_flight_limit > 0 && !j.token_key.empty() ? s.in_flight_limit : 0;
  const bool origin = !j.token_key.empty() || j.parent_job_id != 0;
  auto q = db_->prepare(sql);
  q.args(Blob{s.bundle_body}, j.bundle_hash, s.bundle_body.empty() ? 0 : 1, reuse ? 1 : 0,
         j.content_hash, limit, j.token_key, limit, j.name, j.campaign, j.parent, j.priority,
         j.gpu, dump_json(nlohmann::json(j.regions)), dump_json(j.spec), j.spec_yaml,
         j.source_name, j.bundle_hash, j.content_hash, j.max_attempts, j.submitted_by, now, now,
         j.host_exclusive ? 1 : 0, j.token_key, j.token_key, j.parent_job_id, dump_json(j.change),
         origin ? 1 : 0, now, event_type::job_submitted, dump_json(submitted));
  q.send();
  // The lease planned for the job, in the same transaction: it finds the job by the id the
  // statement above set, and nothing when that wrote none.
  std::optional<Stmt> grant;
  const TimeMs expires = s.grant ? now + s.grant->ttl_ms : 0;
  if (s.grant && s.grant->ttl_ms > 0)
    grant.emplace(send_grant(LeaseGrant{0, s.grant->agent_id, s.grant->decision}, expires, now));
  db_->queue_commit_now();
  Submitted out;
  const bool answered = receive_submit_checks(checks, s, out);
  const bool written = q.step();
  if (written && answered)  // a defect in the statement above, never a refusal to retry
    throw std::logic_error("the submission's checks and its guarded insert disagree: job " +
                           std::to_string(q.i64(0)) + " was written all the same");
  if (written) {
    out.job = read_job(q);
    if (grant && grant->step()) {  // no row: refused, and the job stays queued
      auto granted = read_grant(*grant, s.grant->agent_id, expires);
      out.job = std::move(granted.job);
      out.lease = granted.lease;
    }
    return out;
  }
  if (answered) return out;
  return bundle_clash(j.bundle_hash);
}

}  // namespace kfleet::store::pg
