// Event queries, orchestrator job events, and content-addressed bundles.
#include "pg_store.hpp"

namespace kfleet::store::pg {

Event PgStore::append_job_event(std::int64_t job_id, const std::string& type,
                                    const nlohmann::json& data, TimeMs now) {
  Event out;
  auto r = db_->transaction([&]() -> Result<void> {
    out = insert_job_event(job_id, type, data, now);
    return ok_result();
  });
  // The control plane only writes events about jobs it read from this store, so a failure
  // here (unknown job, disk gone) leaves it with nothing sensible to do.
  if (!r) die(DbError{"", r.error().message}, "append_job_event");
  return out;
}

std::vector<Event> PgStore::job_events(std::int64_t job_id, std::int64_t after_id,
                                           int limit) {
  static const std::string sql = std::string("SELECT ") + kEventColumns +
                                 " FROM events WHERE job_id = ? AND id > ? ORDER BY id LIMIT ?";
  return or_die("job_events", [&] {
    auto q = db_->prepare(sql);
    q.args(job_id, after_id, limit > 0 ? limit : 1000);
    return query_events(q);
  });
}

std::vector<Event> PgStore::run_events(std::int64_t run_id, std::int64_t after_seq,
                                           int limit) {
  // Through the run's job so the (job_id, run_id, seq) index serves the query.
  static const std::string sql =
      std::string("SELECT ") + kEventColumns +
      " FROM events WHERE job_id = (SELECT job_id FROM runs WHERE id = ?) AND run_id = ?"
      " AND seq > ? ORDER BY seq LIMIT ?";
  return or_die("run_events", [&] {
    auto q = db_->prepare(sql);
    q.args(run_id, run_id, after_seq, limit > 0 ? limit : 1000);
    return query_events(q);
  });
}

std::vector<Event> PgStore::events_after(std::int64_t after_id, int limit) {
  static const std::string sql =
      std::string("SELECT ") + kEventColumns + " FROM events WHERE id > ? ORDER BY id LIMIT ?";
  return or_die("events_after", [&] {
    auto q = db_->prepare(sql);
    q.args(after_id, limit > 0 ? limit : 1000);
    return query_events(q);
  });
}

Result<void> PgStore::put_bundle(const std::string& hash, const std::string& body) {
  if (hash.empty()) return make_error(Errc::invalid_argument, "a bundle needs its content hash");
  return db_->transaction([&]() -> Result<void> {
    {
      auto q = db_->prepare("SELECT body FROM bundles WHERE hash = ?");
      q.args(hash);
      if (q.step()) {
        if (q.blob(0) == body) return ok_result();
        return make_error(Errc::conflict, "bundle " + hash +
                                              " is already stored with different content; the "
                                              "hash does not match the body");
      }
    }
    db_->prepare("INSERT INTO bundles (hash, body, size) VALUES (?, ?, ?)")
        .args(hash, Bytes{body}, static_cast<std::int64_t>(body.size()))
        .run();
    return ok_result();
  });
}

std::optional<std::string> PgStore::get_bundle(const std::string& hash) {
  return or_die("get_bundle", [&]() -> std::optional<std::string> {
    auto q = db_->prepare("SELECT body FROM bundles WHERE hash = ?");
    q.args(hash);
    if (!q.step()) return std::nullopt;
    return q.blob(0);
  });
}

}  // namespace kfleet::store::pg
