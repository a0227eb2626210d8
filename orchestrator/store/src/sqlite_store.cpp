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
  Event e;
  e.job_id = job_id;
  e.run_id = 0;
  e.ts_ms = now;
  e.type = type;
  e.data = data.is_null() ? nlohmann::json::object() : data;
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

void SqliteStore::write_job_state(std::int64_t job_id, JobState s, const std::string& reason,
                                  TimeMs now) {
  db_->prepare("UPDATE jobs SET state = ?, state_reason = ?, updated_ms = ? WHERE id = ?")
      .args(to_string(s), reason, now, job_id)
      .run();
  insert_job_event(job_id, event_type::job_state, {{"state", to_string(s)}, {"reason", reason}},
                   now);
}

#include "shared/helpers.inc"

}  // namespace sqlite
}  // namespace kfleet::store
