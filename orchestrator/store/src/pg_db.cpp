// The PostgreSQL backend's connection (pg_db.hpp): its session, the pipeline that carries
// statements sent ahead with the next read, and transactions behind the leader's lock and fence.
// A statement's binds and rows are pg_stmt.cpp's.
#include "pg_db.hpp"

#include "kfleet/store/postgres.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <optional>
#include <utility>

namespace kfleet::store::pg {
namespace {

constexpr const char* kLockAndFence = "SELECT kfleet_lock_and_fence(?, ?)";  // migration 6

[[noreturn]] void throw_conn(PGconn* c, const std::string& what) {
  std::string msg = c ? PQerrorMessage(c) : "out of memory";
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  throw DbError{"", what + ": " + msg};
}

// Throws unless the result is a success; takes ownership of r on failure.
void check(PGconn* c, PGresult* r, const std::string& what) {
  if (!r) throw_conn(c, what);
  const auto st = PQresultStatus(r);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return;
  const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  std::string msg = PQresultErrorMessage(r);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  PQclear(r);
  throw DbError{state ? state : "", msg.empty() ? what + " failed" : msg};
}

}  // namespace

namespace {
// What every session of the store sets first:
// - quiet NOTICEs (CREATE ... IF NOT EXISTS);
// - a prepared statement's generic plan from its first execution. By default PostgreSQL plans
//   each of the first five executions for its parameter values (custom plans) before it
//   settles on the generic plan; every statement of the store settles on it (a bench run's
//   sessions, pg_prepared_statements: five custom plans each, then only generic ones; in git
//   history: 1d3607e:docs/evidence/2026-11-27-postgres-prepared-statements-plans-per-session.txt).
//   Those first five plans made the first five submit-to-lease samples after a start the
//   slowest of the run: the grant, the finish and the long-poll's statements are each planned
//   afresh then.
constexpr const char* kSessionSettings =
    "SET client_min_messages = warning; SET plan_cache_mode = force_generic_plan";
}  // namespace

Result<std::unique_ptr<Db>> Db::open(const std::string& url, const char* application_name) {
  const std::string where = redact_postgres_url(url);
  // The URL (expanded as dbname) first, then the application name on top of it.
  const char* keys[] = {"dbname", "application_name", nullptr};
  const char* values[] = {url.c_str(), application_name, nullptr};
  PGconn* c = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (!c) return make_error(Errc::internal, "cannot connect to " + where + ": out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    PQfinish(c);
    return make_error(Errc::unavailable,
                      "cannot connect to PostgreSQL at " + where + ": " + msg +
                          " (is the server running, and does the database exist? "
                          "createdb it first)");
  }
  std::unique_ptr<Db> db(new Db(c, where));
  try {
    db->exec(kSessionSettings);
  } catch (const DbError& e) {
    return make_error(Errc::internal, "PostgreSQL at " + where + ": " + e.message);
  }
  if (PQserverVersion(c) < 120000) {
    return make_error(Errc::invalid_argument,
                      "PostgreSQL at " + where + " is version " +
                          std::to_string(PQserverVersion(c)) + "; kfleetd needs 12 or newer");
  }
  return db;
}

Db::~Db() {
  if (conn_) PQfinish(conn_);
}

bool Db::ensure_connected() {
  if (PQstatus(conn_) == CONNECTION_OK) return true;
  PQreset(conn_);
  prepared_.clear();  // statements lived on the old session
  if (PQstatus(conn_) != CONNECTION_OK) return false;
  try {
    exec(kSessionSettings);
    if (read_only_) exec("SET default_transaction_read_only = on");
  } catch (const DbError&) {
    return false;
  }
  return true;
}

void Db::set_read_only() {
  exec("SET default_transaction_read_only = on");
  read_only_ = true;
}

Stmt Db::prepare(const std::string& sql) { return Stmt(this, sql); }

PGresult* Db::run_prepared(const std::string& sql, const std::vector<unsigned>& types,
                           const std::vector<const char*>& values,
                           const std::vector<int>& lengths, const std::vector<int>& formats) {
  std::string key = sql;
  key += '\x1f';
  for (auto t : types) key += std::to_string(t) + ",";
  auto it = prepared_.find(key);
  Waiting waiting(this, statement_kind(sql));
  if (it == prepared_.end()) {
    std::string name = "k" + std::to_string(++next_name_);
    static_assert(sizeof(unsigned) == sizeof(Oid));
    PGresult* r = PQprepare(conn_, name.c_str(), number_placeholders(sql).c_str(),
                            static_cast<int>(types.size()),
                            reinterpret_cast<const Oid*>(types.data()));
    ++round_trips_;
    check(conn_, r, "prepare " + sql);
    PQclear(r);
    it = prepared_.emplace(std::move(key), std::move(name)).first;
  }
  ++round_trips_;
  PGresult* r = PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(values.size()),
                               values.data(), lengths.data(), formats.data(), 0);
  check(conn_, r, sql);
  const char* n = PQcmdTuples(r);
  changes_ = (n && *n) ? std::strtoll(n, nullptr, 10) : 0;
  return r;
}

std::int64_t Db::last_insert_id() {
  auto q = prepare("SELECT lastval()");
  q.step();
  return q.i64(0);
}

std::int64_t Db::changes() {
  flush();
  return changes_;
}

void Db::exec(const std::string& sql) {
  flush();
  ++round_trips_;
  Waiting waiting(this, statement_kind(sql));
  PGresult* r = PQexec(conn_, sql.c_str());
  check(conn_, r, sql.substr(0, 60));
  PQclear(r);
}

void Db::enqueue(Stmt* reader, const std::string& sql, const std::vector<unsigned>& types,
                 std::vector<std::string> values, std::vector<char> nulls,
                 std::vector<int> formats) {
  if (commit_queued_ && !after_commit_open_)  // it would run after the COMMIT
    throw DbError{"", "a statement came after the transaction's last read (commit_with_next_read): " +
                          sql.substr(0, 60)};
  Pending p;
  p.sql = sql;
  p.types = types;
  p.values = std::move(values);
  p.nulls = std::move(nulls);
  p.formats = std::move(formats);
  p.reader = reader;
  queue_.push_back(std::move(p));
  if (reader && commit_next_) {
    commit_next_ = false;
    commit_queued_ = true;
    push_commit();
  }
}

void Db::push_commit() {
  Pending c;
  c.cmd = "COMMIT";
  queue_.push_back(std::move(c));
  if (!after_commit_) return;
  auto f = std::move(after_commit_);
  after_commit_ = nullptr;
  after_commit_open_ = true;
  struct Close {
    bool& open;
    ~Close() { open = false; }
  } close{after_commit_open_};
  f();
}

void Db::forget(Stmt* reader) {
  for (auto& p : queue_)
    if (p.reader == reader) p.reader = nullptr;
}

void Db::moved(Stmt* from, Stmt* to) {
  for (auto& p : queue_)
    if (p.reader == from) p.reader = to;
}

void Db::flush() {
  if (queue_.empty()) return;
  std::vector<Pending> batch;
  batch.swap(queue_);
  // A connection the server dropped (restart, idle timeout) shows only when used: when this
  // round trip opens the transaction, nothing of it reached the server yet, so reopen the
  // connection once and send it again.
  const bool opens = batch.front().cmd.rfind("BEGIN", 0) == 0;
  if (batch.size() > 2 && batch.front().cmd == "BEGIN" && batch.back().cmd == "COMMIT") {
    // The whole transaction is this one round trip: the statements of a pipeline up to its
    // sync already run as one (implicit) transaction, committed at the sync and rolled back
    // by any error, so BEGIN and COMMIT need not be sent. The call still returns only after
    // the sync's result, i.e. after the commit.
    batch.pop_back();
    batch.erase(batch.begin());
  }
  try {
    try {
      send_batch(batch);
    } catch (const DbError& e) {
      if (!opens || e.sqlstate == kNotLeaderState || !broken() || !ensure_connected()) throw;
      send_batch(batch);
    }
  } catch (...) {
    for (auto& p : batch)
      if (p.reader) p.reader->queued_ = false;
    throw;
  }
}

void Db::send_batch(std::vector<Pending>& batch) {
  ++round_trips_;
  // Named by its first statement (BEGIN, the lock and the fence passed over), +COMMIT when it
  // commits.
  std::string kind;
  bool commits = false;
  for (const auto& p : batch) {
    if (kind.empty() && !p.sql.empty() && p.sql != kLockAndFence) kind = statement_kind(p.sql);
    if (p.cmd == "COMMIT") commits = true;
  }
  if (kind.empty() && !batch.empty())
    kind = statement_kind(batch.front().cmd.empty() ? batch.front().sql : batch.front().cmd);
  if (commits && kind != "COMMIT") kind += " +COMMIT";
  Waiting waiting(this, std::move(kind));
  if (PQpipelineStatus(conn_) == PQ_PIPELINE_OFF && !PQenterPipelineMode(conn_))
    throw_conn(conn_, "entering pipeline mode");
  // What went out, in order: each statement's prepare (first use on this connection) and
  // execution; each comes back as results followed by a null.
  struct Sent {
    std::size_t item;
    std::string prepared_key;  // non-empty: this was the prepare of that key
  };
  std::vector<Sent> sent;
  std::unordered_map<std::string, std::string> fresh;  // prepared in this round trip
  auto fail_send = [&](const char* what) {
    std::string msg = PQerrorMessage(conn_);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    // Leave the pipeline as the connection allows; a broken connection is reset later.
    PQpipelineSync(conn_);
    while (PGresult* r = PQgetResult(conn_)) PQclear(r);
    PQexitPipelineMode(conn_);
    throw DbError{"", std::string(what) + ": " + msg};
  };
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto& p = batch[i];
    if (!p.cmd.empty()) {
      if (!PQsendQueryParams(conn_, p.cmd.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0))
        fail_send("sending a command");
      sent.push_back({i, {}});
      continue;
    }
    std::string key = p.sql;
    key += '\x1f';
    for (auto t : p.types) key += std::to_string(t) + ",";
    std::string name;
    if (auto it = prepared_.find(key); it != prepared_.end()) {
      name = it->second;
    } else if (auto f = fresh.find(key); f != fresh.end()) {
      name = f->second;
    } else {
      name = "k" + std::to_string(++next_name_);
      if (!PQsendPrepare(conn_, name.c_str(), number_placeholders(p.sql).c_str(),
                         static_cast<int>(p.types.size()),
                         reinterpret_cast<const Oid*>(p.types.data())))
        fail_send("sending a prepare");
      fresh.emplace(key, name);
      sent.push_back({i, key});
    }
    std::vector<const char*> values;
    std::vector<int> lengths;
    for (std::size_t k = 0; k < p.values.size(); ++k) {
      values.push_back(p.nulls[k] ? nullptr : p.values[k].c_str());
      lengths.push_back(static_cast<int>(p.values[k].size()));
    }
    if (!PQsendQueryPrepared(conn_, name.c_str(), static_cast<int>(values.size()),
                             values.data(), lengths.data(), p.formats.data(), 0))
      fail_send("sending a statement");
    sent.push_back({i, {}});
  }
  if (!PQpipelineSync(conn_)) fail_send("sending a sync");

  std::optional<DbError> first_error;
  bool lost = false;
  for (const auto& s : sent) {
    PGresult* r = PQgetResult(conn_);
    if (!r) {
      lost = true;
      break;
    }
    const auto st = PQresultStatus(r);
    if (st == PGRES_PIPELINE_ABORTED) {
      PQclear(r);
    } else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      if (!first_error) {
        const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        std::string msg = PQresultErrorMessage(r);
        while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
        const auto& p = batch[s.item];
        first_error = DbError{state ? state : "",
                              msg.empty() ? (p.cmd.empty() ? p.sql : p.cmd) + " failed" : msg};
      }
      PQclear(r);
    } else if (!s.prepared_key.empty()) {
      prepared_[s.prepared_key] = fresh[s.prepared_key];
      PQclear(r);
    } else {
      const char* n = PQcmdTuples(r);
      changes_ = (n && *n) ? std::strtoll(n, nullptr, 10) : 0;
      if (Stmt* reader = batch[s.item].reader) {
        if (reader->res_) PQclear(reader->res_);
        reader->res_ = r;
        reader->row_ = -1;
        reader->queued_ = false;
      } else {
        PQclear(r);
      }
    }
    if (PGresult* extra = PQgetResult(conn_)) {  // the null that ends this statement's results
      PQclear(extra);
      lost = true;
      break;
    }
  }
  // The sync's own result, then out of pipeline mode (which needs every result read).
  if (!lost) {
    PGresult* r = PQgetResult(conn_);
    if (!r || PQresultStatus(r) != PGRES_PIPELINE_SYNC) lost = true;
    if (r) PQclear(r);
  }
  if (lost) {
    if (PQstatus(conn_) == CONNECTION_OK) PQreset(conn_);  // out of step: start clean
    prepared_.clear();
    throw first_error ? *first_error
                      : DbError{"", "the connection to " + where_ + " failed mid-call" +
                                        (PQerrorMessage(conn_)[0] ? std::string(": ") +
                                                                        PQerrorMessage(conn_)
                                                                  : std::string())};
  }
  PQexitPipelineMode(conn_);
  if (first_error) throw *first_error;
}

void Db::begin() {
  static const std::string lock =
      "SELECT pg_advisory_xact_lock(" + std::to_string(kWriteLockKey) + ")";
  if (!ensure_connected()) throw_conn(conn_, "reconnecting to " + where_);
  if (PQtransactionStatus(conn_) != PQTRANS_IDLE) rollback();  // never nest in a leftover one
  queue_.clear();
  in_tx_ = true;
  commit_next_ = commit_queued_ = false;
  Pending b;
  if (read_only_) {
    // A standby takes no write lock (it would only hold the leader's writers up): its
    // transaction reads a snapshot, and the server refuses the first write in it.
    b.cmd = "BEGIN READ ONLY";
    queue_.push_back(std::move(b));
    return;
  }
  b.cmd = "BEGIN";
  queue_.push_back(std::move(b));
  Pending l;
  if (!fence_) {
    l.cmd = lock;
  } else {
    // The lock, then the fencing check, in the server: a deposed leader's transaction fails
    // here (KF001), and everything queued behind it, its COMMIT included, is skipped.
    l.sql = kLockAndFence;
    l.types = {kInt8, kInt8};
    l.values = {std::to_string(kWriteLockKey), std::to_string(fence_)};
    l.nulls = {0, 0};
    l.formats = {0, 0};
  }
  queue_.push_back(std::move(l));
}

void Db::begin_pipelined_reads() {
  if (in_tx_) throw DbError{"", "pipelined reads inside a transaction"};
  if (!ensure_connected()) throw_conn(conn_, "reconnecting to " + where_);
  queue_.clear();
  in_tx_ = true;  // send() queues and step() flushes, as in a transaction; no BEGIN, lock or COMMIT
  commit_next_ = commit_queued_ = false;
}

void Db::end_pipelined_reads() {
  for (auto& p : queue_)
    if (p.reader) p.reader->queued_ = false;
  queue_.clear();
  in_tx_ = false;
}

void Db::queue_commit_now() {
  if (!in_tx_ || commit_queued_) return;
  commit_next_ = false;
  commit_queued_ = true;
  push_commit();
}

void Db::commit() {
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{in_tx_};
  commit_next_ = false;
  if (commit_queued_) {
    commit_queued_ = false;
    flush();  // no-op when the COMMIT went with the last read
    return;
  }
  // Nothing reached the server (a call that decided before reading or writing anything):
  // there is nothing to commit and nothing the fence would guard.
  if (!queue_.empty() && queue_.front().cmd.rfind("BEGIN", 0) == 0 &&
      std::all_of(queue_.begin(), queue_.end(), [](const Pending& p) {
        return !p.cmd.empty() || p.sql == kLockAndFence;
      })) {
    queue_.clear();
    return;
  }
  push_commit();
  flush();
}

void Db::rollback() {
  for (auto& p : queue_)
    if (p.reader) p.reader->queued_ = false;
  queue_.clear();
  in_tx_ = false;
  commit_next_ = commit_queued_ = false;
  if (PQstatus(conn_) != CONNECTION_OK) return;
  if (PQtransactionStatus(conn_) != PQTRANS_IDLE) {
    ++round_trips_;
    Waiting waiting(this, "ROLLBACK");
    PGresult* r = PQexec(conn_, "ROLLBACK");
    if (r) PQclear(r);
  }
}

Error Db::failure(const DbError& e) const {
  if (e.sqlstate == kNotLeaderState) return make_error(Errc::unavailable, e.message);
  if (e.sqlstate == kReadOnlyState)
    return make_error(Errc::unavailable,
                      "this kfleetd is a standby: its store is read-only and PostgreSQL refused "
                      "the write (" + e.message + "); writes go to the leader");
  if (e.sqlstate.empty() || e.sqlstate.rfind("08", 0) == 0 || e.sqlstate.rfind("57", 0) == 0 ||
      e.sqlstate == "40001" || e.sqlstate == "40P01" || e.sqlstate == "53100" ||
      e.sqlstate == "53200" || e.sqlstate == "53300")
    return make_error(Errc::unavailable, "PostgreSQL at " + where_ + ": " + e.message);
  if (e.sqlstate.rfind("23", 0) == 0) return make_error(Errc::conflict, e.message);
  return make_error(Errc::internal, "PostgreSQL at " + where_ + ": " + e.message);
}

void die(const DbError& e, const char* what) {
  // A store call whose signature cannot carry an error failed: leave, with a status a supervisor
  // can act on, not a core dump. 3: another kfleetd took over (this one was fenced off; restart
  // it and it comes back as a standby), as when its lock connection breaks. 4: the database
  // failed or could not be reached after a reconnect; nothing was half-written (every write is
  // one transaction), so a restart resumes from the database.
  const bool deposed = e.sqlstate == kNotLeaderState ||
                       e.message.find("is no longer the leader") != std::string::npos;
  if (e.sqlstate == kReadOnlyState)
    std::fprintf(stderr, "kfleet store: %s tried to write through a standby's read-only store "
                         "(a bug: a standby never writes); PostgreSQL refused it\n", what);
  std::fprintf(stderr, "kfleet store: %s failed: %s\nkfleetd: %s\n", what, e.message.c_str(),
               deposed ? "stepping down (exit 3)" : "exiting: the PostgreSQL store failed (exit 4)");
  std::_Exit(deposed ? 3 : 4);
}

}  // namespace kfleet::store::pg
