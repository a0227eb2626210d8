// Opening the SQLite store, and the in-transaction helpers its methods share.
#include "sqlite_store.hpp"

#include "migrations.hpp"

namespace kfleet::store {

Result<StorePtr> open_sqlite_store(const SqliteOptions& o) {
  if (o.path.empty())
    return make_error(Errc::invalid_argument, "no database path given (use --db FILE)");
  auto db = sqlite::Db::open(o.path, o.synchronous_full);
  if (!db) return db.error();
  auto m = sqlite::migrate(**db);
  if (!m) return m.error();
  return StorePtr(std::make_unique<sqlite::SqliteStore>(std::move(*db)));
}

namespace sqlite {

Event SqliteStore::insert_job_event(std::int64_t job_id, const std::string& type,
                                    const nlohmann::json& data, TimeMs now) {
  Event e = job_event_record(job_id, type, data, now);
  {
    auto q = db_->prepare(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE job_id = ? AND run_id = 0");
    q.args(job_id);
    q.step();
    e.seq = q.i64(0);
  }
  db_->prepare(
         "INSERT INTO events (job_id, run_id, seq, ts_ms, type, data) VALUES (?, 0, ?, ?, ?, ?)")
      .args(job_id, e.seq, now, type, dump_json(e.data))
      .run();
  e.id = db_->last_insert_id();
  return e;
}

JobRecord SqliteStore::insert_job(const NewJob& j, const nlohmann::json& submitted,
                                  TimeMs now) {
  std::int64_t id = 0;
  {
    auto q = db_->prepare(
        "INSERT INTO jobs (name, campaign, parent, priority, gpu, regions, spec, spec_yaml, "
        "source_name, bundle_hash, content_hash, state, state_reason, attempts, max_attempts, "
        "current_run_id, submitted_by, created_ms, updated_ms, simulated, host_exclusive, "
        "token_key, language) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', '', 0, ?, 0, ?, "
        "?, ?, 0, ?, ?, ?) RETURNING id");
    q.args(j.name, j.campaign, j.parent, j.priority, j.gpu,
           dump_json(nlohmann::json(j.regions)), dump_json(j.spec), j.spec_yaml, j.source_name,
           j.bundle_hash, j.content_hash, j.max_attempts, j.submitted_by, now, now,
           j.host_exclusive ? 1 : 0, j.token_key, job_language(j));
    q.step();
    id = q.i64(0);
  }
  if (!j.token_key.empty() || j.parent_job_id != 0) {
    db_->prepare("INSERT INTO job_origins (job_id, token_key, parent_job_id, change) "
                 "VALUES (?, ?, ?, ?)")
        .args(id, j.token_key, j.parent_job_id, dump_json(j.change))
        .run();
  }
  insert_job_event(id, event_type::job_submitted, submitted, now);
  return *load_job(id);
}

void SqliteStore::finish_job_row(std::int64_t job_id, const std::string& verdict, bool simulated,
                                 JobState s, const std::string& reason, TimeMs now) {
  db_->prepare("UPDATE jobs SET verdict = ?, simulated = ?, current_run_id = 0 WHERE id = ?")
      .args(verdict, simulated, job_id)
      .run();
  write_job_state(job_id, s, reason, now);
}

void SqliteStore::write_job_state(std::int64_t job_id, JobState s, const std::string& reason,
                                  TimeMs now) {
  db_->prepare("UPDATE jobs SET state = ?, state_reason = ?, updated_ms = ? WHERE id = ?")
      .args(to_string(s), reason, now, job_id)
      .run();
  insert_job_event(job_id, event_type::job_state, {{"state", to_string(s)}, {"reason", reason}},
                   now);
}

std::map<std::int64_t, JobRecord> SqliteStore::load_jobs(const std::vector<std::int64_t>& ids) {
  std::map<std::int64_t, JobRecord> out;
  for (auto id : ids)
    if (!out.count(id))
      if (auto j = load_job(id)) out.emplace(id, std::move(*j));
  return out;
}

#include "shared/helpers.inc"

}  // namespace sqlite
}  // namespace kfleet::store
