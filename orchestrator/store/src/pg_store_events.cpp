// Event queries, orchestrator job events, and content-addressed bundles. The writers and the
// bundles are shared/events.inc, which both backends compile; the queries below read
// PostgreSQL's event_batches, a batch to a row (migration 10): each opens only the batches
// that can hold the page it returns.
#include <cstdint>
#include <limits>

#include "pg_store.hpp"

namespace kfleet::store::pg {

#include "shared/events.inc"

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::int64_t plus(std::int64_t a, std::int64_t b) {  // saturating: an `after` from a URL
  return a > kMax - b ? kMax : a + b;
}

// The events after id `after` in id order, `limit` at most, from the batches `where` picks
// (its parameters come first). A batch holds the ids first_id..last_id, and a batch that ends
// after `after` holds at least one of them, so the first `limit` such batches hold the page;
// of those, only the batches with fewer than `limit` of the page's events before them are
// opened (the rest never leave the index and the row's out-of-line arrays stay unread).
// Parameters: after + 1, then where's, then after, limit, limit, after, limit.
std::string events_by_id(const std::string& where) {
  return "WITH b AS (SELECT last_id, first_id, COALESCE(sum(last_id - GREATEST(first_id, ?) + 1) "
         "OVER (ORDER BY last_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before "
         "FROM "
         "(SELECT last_id, first_id FROM event_batches WHERE " + where +
         " AND last_id > ? ORDER BY last_id LIMIT ?) x) "
         "SELECT e.first_id + u.ord - 1, e.job_id, e.run_id, u.seq, u.ts_ms, u.type, u.data "
         "FROM b JOIN event_batches e ON e.last_id = b.last_id, "
         "unnest(e.seqs, e.ts_ms, e.types, e.datas) WITH ORDINALITY AS u(seq, ts_ms, type, data, ord) "
         "WHERE b.before < ? AND e.first_id + u.ord - 1 > ? ORDER BY 1 LIMIT ?";
}

}  // namespace

std::vector<Event> PgStore::job_events(std::int64_t job_id, std::int64_t after_id, int limit) {
  static const std::string sql = events_by_id("job_id = ?");
  const std::int64_t n = limit > 0 ? limit : 1000;
  return or_die("job_events", [&] {
    auto q = db_->prepare(sql);
    q.args(plus(after_id, 1), job_id, after_id, n, n, after_id, n);
    return query_events(q);
  });
}

std::vector<Event> PgStore::events_after(std::int64_t after_id, int limit) {
  static const std::string sql = events_by_id("TRUE");
  const std::int64_t n = limit > 0 ? limit : 1000;
  return or_die("events_after", [&] {
    auto q = db_->prepare(sql);
    q.args(plus(after_id, 1), after_id, n, n, after_id, n);
    return query_events(q);
  });
}

std::vector<Event> PgStore::run_events(std::int64_t run_id, std::int64_t after_seq, int limit) {
  // In seq order, which is not the batches' order (an agent resends what was not
  // acknowledged), so every batch of the run that ends after `after_seq` may hold part of the
  // page — unless the run's seqs are known to have no gap up to after_seq + limit (its
  // watermark, runs.events_contiguous): then the page is exactly the seqs after_seq + 1 ..
  // after_seq + limit and only the batches that start by then are opened.
  static const std::string sql =
      "SELECT b.first_id + u.ord - 1, b.job_id, b.run_id, u.seq, u.ts_ms, u.type, u.data "
      "FROM event_batches b, "
      "unnest(b.seqs, b.ts_ms, b.types, b.datas) WITH ORDINALITY AS u(seq, ts_ms, type, data, ord) "
      "WHERE b.job_id = (SELECT job_id FROM runs WHERE id = ?) AND b.run_id = ? AND "
      "b.max_seq > ? AND b.min_seq <= CASE WHEN ? <= (SELECT events_contiguous FROM runs "
      "WHERE id = ?) THEN ? ELSE 9223372036854775807 END AND u.seq > ? ORDER BY u.seq LIMIT ?";
  const std::int64_t n = limit > 0 ? limit : 1000;
  const std::int64_t last = plus(after_seq, n);
  return or_die("run_events", [&] {
    auto q = db_->prepare(sql);
    q.args(run_id, run_id, after_seq, last, run_id, last, after_seq, n);
    return query_events(q);
  });
}

}  // namespace kfleet::store::pg
