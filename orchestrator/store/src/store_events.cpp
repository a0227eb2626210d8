// Event queries, orchestrator job events, and content-addressed bundles. The writers and the
// bundles are shared/events.inc, which both backends compile; the queries below read SQLite's
// events table, an event to a row.
#include "sqlite_store.hpp"

namespace kfleet::store::sqlite {

#include "shared/events.inc"

std::vector<Event> SqliteStore::job_events(std::int64_t job_id, std::int64_t after_id,
                                           int limit) {
  static const std::string sql = std::string("SELECT ") + kEventColumns +
                                 " FROM events WHERE job_id = ? AND id > ? ORDER BY id LIMIT ?";
  return or_die("job_events", [&] {
    auto q = db_->prepare(sql);
    q.args(job_id, after_id, limit > 0 ? limit : 1000);
    return query_events(q);
  });
}

std::vector<Event> SqliteStore::run_events(std::int64_t run_id, std::int64_t after_seq,
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

std::vector<Event> SqliteStore::events_after(std::int64_t after_id, int limit) {
  static const std::string sql =
      std::string("SELECT ") + kEventColumns + " FROM events WHERE id > ? ORDER BY id LIMIT ?";
  return or_die("events_after", [&] {
    auto q = db_->prepare(sql);
    q.args(after_id, limit > 0 ? limit : 1000);
    return query_events(q);
  });
}

}  // namespace kfleet::store::sqlite
