// Opening the PostgreSQL store, and the in-transaction helpers its methods share.
#include "pg_store.hpp"

#include <algorithm>

#include "kfleet/store/postgres.hpp"

namespace kfleet::store {

bool postgres_supported() { return true; }

Result<StorePtr> open_postgres_store(const PostgresOptions& o) {
  if (o.url.empty())
    return make_error(Errc::invalid_argument,
                      "no PostgreSQL URL given (use --db postgresql://user@host/database)");
  if (o.read_only) {
    auto db = pg::Db::open(
        o.url, o.application_name.empty() ? "kfleetd-standby" : o.application_name.c_str());
    if (!db) return db.error();
    try {
      (*db)->set_read_only();
      std::int64_t version = 0;
      auto q = (*db)->prepare("SELECT version FROM schema_version LIMIT 1");
      if (q.step()) version = q.i64(0);
      if (version != pg::latest_schema_version())
        return make_error(Errc::unavailable,
                          "the database at " + (*db)->where() + " has schema version " +
                              std::to_string(version) + ", this kfleetd's is " +
                              std::to_string(pg::latest_schema_version()) +
                              "; a read-only standby cannot migrate it (start one kfleetd of "
                              "this version as the leader first, or upgrade this one)");
    } catch (const pg::DbError& e) {
      return make_error(Errc::unavailable, "PostgreSQL at " + (*db)->where() + ": " + e.message);
    }
    return StorePtr(std::make_unique<pg::PgStore>(std::move(*db)));
  }
  auto db = pg::Db::open(o.url);
  if (!db) return db.error();
  auto m = pg::migrate(**db);
  if (!m) return m.error();
  (*db)->set_fence(o.leader_epoch);
  return StorePtr(std::make_unique<pg::PgStore>(std::move(*db)));
}

// --- leadership

struct PostgresLeader::Impl {
  std::unique_ptr<pg::Db> db;
};

PostgresLeader::PostgresLeader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PostgresLeader::~PostgresLeader() = default;

Result<std::unique_ptr<PostgresLeader>> PostgresLeader::connect(const std::string& url) {
  auto db = pg::Db::open(url, "kfleetd-leader");
  if (!db) return db.error();
  auto m = pg::migrate(**db);
  if (!m) return m.error();
  auto impl = std::make_unique<Impl>();
  impl->db = std::move(*db);
  return std::unique_ptr<PostgresLeader>(new PostgresLeader(std::move(impl)));
}

Result<bool> PostgresLeader::try_acquire(TimeMs now) {
  auto& db = *impl_->db;
  if (epoch_ != 0) return still_leader();
  try {
    if (!db.ensure_connected())
      return make_error(Errc::unavailable, "cannot reach PostgreSQL at " + db.where());
    auto q = db.prepare("SELECT pg_try_advisory_lock(?)");
    q.args(pg::kLeaderLockKey);
    if (!q.step() || !q.boolean(0)) return false;
  } catch (const pg::DbError& e) {
    return make_error(Errc::unavailable, "PostgreSQL at " + db.where() + ": " + e.message);
  }
  // The lock is ours: a new epoch, written under the store's write lock, so every write of
  // the previous leader either committed before it or is refused after it.
  auto r = db.transaction([&]() -> Result<std::int64_t> {
    auto q = db.prepare(
        "UPDATE kfleet_leader SET epoch = epoch + 1, url = '', since_ms = ? WHERE id = 1 "
        "RETURNING epoch");
    q.args(now);
    if (!q.step()) return make_error(Errc::internal, "kfleet_leader has no row (schema damaged?)");
    return q.i64(0);
  });
  if (!r) return r.error();
  epoch_ = *r;
  return true;
}

Result<void> PostgresLeader::set_url(const std::string& url) {
  auto& db = *impl_->db;
  return db.transaction([&]() -> Result<void> {
    db.prepare("UPDATE kfleet_leader SET url = ? WHERE id = 1 AND epoch = ?")
        .args(url, epoch_)
        .run();
    if (db.changes() == 0)
      return make_error(Errc::unavailable, "another kfleetd took over before this one served");
    return ok_result();
  });
}

Result<LeaderInfo> PostgresLeader::current() {
  auto& db = *impl_->db;
  try {
    if (epoch_ == 0 && !db.ensure_connected())
      return make_error(Errc::unavailable, "cannot reach PostgreSQL at " + db.where());
    auto q = db.prepare("SELECT epoch, url, since_ms FROM kfleet_leader WHERE id = 1");
    if (!q.step()) return make_error(Errc::internal, "kfleet_leader has no row");
    return LeaderInfo{q.i64(0), q.text(1), q.i64(2)};
  } catch (const pg::DbError& e) {
    return make_error(Errc::unavailable, "PostgreSQL at " + db.where() + ": " + e.message);
  }
}

bool PostgresLeader::still_leader() {
  if (epoch_ == 0) return false;
  auto& db = *impl_->db;
  if (db.broken()) return false;  // never reconnect: the lock died with the connection
  try {
    // The epoch is still ours and this session still holds the lock.
    auto q = db.prepare(
        "SELECT epoch = ? AND EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
        "AND pid = pg_backend_pid() AND granted AND classid::bigint = ? AND objid::bigint = ? "
        "AND objsubid = 1) FROM kfleet_leader WHERE id = 1");
    q.args(epoch_, static_cast<std::int64_t>(static_cast<std::uint64_t>(pg::kLeaderLockKey) >> 32),
           static_cast<std::int64_t>(static_cast<std::uint64_t>(pg::kLeaderLockKey) & 0xffffffffu));
    return q.step() && q.boolean(0);
  } catch (const pg::DbError&) {
    return false;
  }
}

namespace pg {

std::string job_event_insert(const std::string& job, const std::string& from,
                             const std::string& where, const std::string& data) {
  return "INSERT INTO event_batches (last_id, first_id, job_id, run_id, min_seq, max_seq, seqs, "
         "ts_ms, types, datas) "
         "SELECT c.value, c.value, " + job + ", 0, s.seq, s.seq, ARRAY[s.seq], ARRAY[?::bigint], "
         "ARRAY[?::text], ARRAY[(" + data + ")::text] FROM " + from +
         " CROSS JOIN LATERAL (SELECT COALESCE(MAX(max_seq), 0) + 1 AS seq FROM event_batches "
         "WHERE job_id = " + job + " AND run_id = 0) s" +
         (where.empty() ? std::string() : " WHERE " + where);
}

std::vector<Store::StatementWait> PgStore::statement_waits() const {
  std::vector<StatementWait> out;
  for (const auto& [kind, w] : db_->waits_by_kind()) out.push_back({kind, w.round_trips, w.wait_ns, w.slow});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.statement < b.statement; });
  return out;
}

Event PgStore::insert_job_event(std::int64_t job_id, const std::string& type,
                                const nlohmann::json& data, TimeMs now) {
  Event e = job_event_record(job_id, type, data, now);
  // The id comes from the counters row (gap-free: the write lock orders every transaction
  // that takes one), the seq from the job's own events; one round trip.
  // The job is read in the same statement: no row, no event (migration 7: no foreign key).
  static const std::string sql =
      "WITH c AS (UPDATE counters SET value = value + 1 WHERE name = 'event_id' "
      "RETURNING value) " +
      job_event_insert("j.id", "c, jobs j", "j.id = ?") + " RETURNING last_id, max_seq";
  auto q = db_->prepare(sql);
  q.args(now, type, dump_json(e.data), job_id);
  if (!q.step())
    throw DbError{"23503", "job " + std::to_string(job_id) + " not found for its " + type +
                               " event (or the event counter is missing)"};
  e.id = q.i64(0);
  e.seq = q.i64(1);
  return e;
}

void PgStore::write_job_state(std::int64_t job_id, JobState s, const std::string& reason,
                                  TimeMs now) {
  // The state and its job.state event in one statement, queued (no round trip of its own):
  // the control plane calls this several times per job. Nothing reads its rows, so a job that
  // is not there must fail in the server: the LEFT JOIN gives the event a NULL job_id, which
  // its NOT NULL refuses (callers load the job in the same transaction first, so this is a
  // guard, not a path).
  const nlohmann::json data = {{"state", to_string(s)}, {"reason", reason}};
  static const std::string sql =
      "WITH u AS (UPDATE jobs SET state = ?, state_reason = ?, updated_ms = ? WHERE id = ? "
      "RETURNING id), "
      "c AS (UPDATE counters SET value = value + 1 WHERE name = 'event_id' RETURNING value) " +
      job_event_insert("u.id", "c LEFT JOIN u ON TRUE");
  db_->prepare(sql)
      .args(to_string(s), reason, now, job_id, now, event_type::job_state, dump_json(data))
      .run();
}

std::map<std::int64_t, JobRecord> PgStore::load_jobs(const std::vector<std::int64_t>& ids) {
  // One lookup by id per job, all sent together: one round trip. Not `id = ANY(?)` of an array:
  // its generic plan, made while the jobs table was small (a fresh database, the first
  // passes), stays a sequential scan as the table grows, until an ANALYZE replans it; at
  // 50,000 jobs each call took 75-100 ms. The lookup by id is the primary key's at any size.
  static const std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?";
  std::map<std::int64_t, JobRecord> out;
  std::vector<Stmt> sent;
  sent.reserve(ids.size());  // never reallocated: the queue points at them
  for (const auto id : ids) {
    sent.push_back(db_->prepare(sql));
    sent.back().args(id).send();
  }
  for (auto& q : sent) {
    if (!q.step()) continue;
    JobRecord j = read_job(q);
    out.emplace(j.id, std::move(j));
  }
  return out;
}

#include "shared/helpers.inc"

}  // namespace pg
}  // namespace kfleet::store
