#pragma once
// A thin SQLite connection: cached prepared statements, typed binds and reads, and a
// transaction helper that turns SQLite failures into Result errors. Failures travel inside
// the store as DbError and are caught at the Store method boundary, never beyond it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "kfleet/common/result.hpp"
#include "shared/json_text.hpp"

namespace kfleet::store::sqlite {

struct Blob {
  std::string_view bytes;
};

// The oldest SQLite the store runs on (INSERT ... RETURNING came in 3.35.0); Db::open refuses
// an older library.
inline constexpr int kMinSqliteVersion = 3035000;

// The SQL the two backends spell differently (the store's shared text, shared/*.inc, uses it).
inline constexpr const char* kGreatest = "MAX";  // the larger of two values
// An agent of the live fleet (not retired), spelled as the partial index agents_live spells
// it, so the planner reads the live fleet from that index (migration 6).
inline constexpr const char* kLiveAgent = "state <> 'retired'";

struct DbError {
  int rc = 0;
  std::string message;
};

// A borrowed cached statement; resets itself when it goes out of scope so it can be reused.
class Stmt {
 public:
  Stmt(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  Stmt(Stmt&& o) noexcept : db_(o.db_), s_(std::exchange(o.s_, nullptr)) {}
  Stmt& bind(int i, const std::optional<std::string>& v);

#include "shared/stmt_binds.inc"

  bool step();  // true: a row is ready; false: done. Throws DbError.
  void reset();  // ready to bind and run again (for loops over one statement)
  void run();   // steps a statement that returns no rows
  // PostgreSQL sends a read ahead to share a round trip with the next one (pg_db.hpp); here a
  // statement runs in process when first stepped, so there is nothing to send.
  void send() {}

  std::int64_t i64(int col) const;
  double f64(int col) const;
  std::string text(int col) const;
  std::string blob(int col) const;
  bool is_null(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* s_;
};

class Checkpointer;

class Db {
 public:
  // Opens (creating if needed) with WAL, foreign keys, a busy timeout and the sync level.
  static Result<std::unique_ptr<Db>> open(const std::string& path, bool synchronous_full);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Stmt prepare(const std::string& sql);  // cached for the connection's lifetime
  void exec(const char* sql);            // one-off statements (schema, pragmas)
  std::int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }
  sqlite3* handle() const { return db_; }
  // PostgreSQL sends its COMMIT with the call's last read (pg_db.hpp); here the COMMIT costs
  // no round trip and comes when the transaction's function returns.
  void commit_with_next_read() {}
  void queue_commit_now() {}
  // PostgreSQL sends the reads made inside f in one round trip (pg_db.hpp); here each read
  // runs when stepped, in process.
  template <class F>
  auto pipelined_reads(F&& f) -> decltype(f()) {
    return f();
  }
  const std::string& path() const { return path_; }

  // Transactions are BEGIN IMMEDIATE ... COMMIT.
#include "shared/transaction.inc"

 private:
  explicit Db(sqlite3* db, std::string path);
  void begin() { prepare("BEGIN IMMEDIATE").run(); }
  void commit() { prepare("COMMIT").run(); }
  void rollback();
  Error failure(const DbError& e) const;
  static int on_commit(void* self, sqlite3* db, const char* name, int wal_pages);

  sqlite3* db_;
  std::string path_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
  std::unique_ptr<Checkpointer> checkpointer_;  // null: this connection checkpoints itself
  int nudged_at_ = 0;  // the WAL's size in pages when the checkpointer was last asked
};

// Aborts with the database's message: for read paths whose signature cannot carry an error.
[[noreturn]] void die(const DbError& e, const char* what);

template <class F>
auto or_die(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const DbError& e) {
    die(e, what);
  }
}

}  // namespace kfleet::store::sqlite
