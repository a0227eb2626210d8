#pragma once
// A thin libpq connection with the same shape as sqlite_db.hpp: statements written with `?`
// placeholders (rewritten to $1..$n), prepared once per connection on first use with the
// parameter types of their first binding, typed reads, and a transaction helper. Every
// transaction takes one transaction-scoped advisory lock first, so writers from any number of
// connections (and kfleetd processes) run one after another, as SQLite's BEGIN IMMEDIATE does:
// every check-then-write in the store sees the latest committed state, and event ids taken from
// the counters row stay gap-free and in commit order. Failures travel as DbError inside the
// store and are turned into Result errors at the Store method boundary.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include "kfleet/common/result.hpp"

namespace kfleet::store::pg {

// The key of the advisory lock every store transaction holds (ASCII "kfleetwr").
inline constexpr std::int64_t kWriteLockKey = 0x6b666c6565747772;
// The key of the session advisory lock the leader kfleetd holds (ASCII "kfleetld").
inline constexpr std::int64_t kLeaderLockKey = 0x6b666c6565746c64;
// The SQLSTATE a fenced write fails with when another kfleetd has taken over.
inline constexpr const char* kNotLeaderState = "KF001";

// The SQL the two backends spell differently (the store's shared text, shared/*.inc, uses it).
inline constexpr const char* kGreatest = "GREATEST";  // the larger of two values

struct Blob {
  std::string_view bytes;
};

struct DbError {
  std::string sqlstate;  // e.g. "23505" (unique violation); "" when the connection failed
  std::string message;
};

class Db;

// One execution of a cached statement. Binds are by 1-based index, as in SQLite.
class Stmt {
 public:
  Stmt(Db* db, std::string sql) : db_(db), sql_(std::move(sql)) {}
  Stmt(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& operator=(Stmt&&) = delete;
  ~Stmt();

  Stmt& bind(int i, std::int64_t v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  Stmt& bind(int i, bool v) { return bind(i, static_cast<std::int64_t>(v ? 1 : 0)); }
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, Blob v);
  Stmt& bind(int i, std::nullopt_t);

  template <class... Ts>
  Stmt& args(const Ts&... vs) {
    int i = 0;
    (bind(++i, vs), ...);
    return *this;
  }

  bool step();   // runs the statement on the first call; true while a row is ready
  void reset();  // ready to bind and run again
  void run();    // runs a statement and ignores any rows
  std::int64_t changes() const { return changes_; }  // rows the last run changed

  std::int64_t i64(int col) const;
  int i32(int col) const { return static_cast<int>(i64(col)); }
  bool boolean(int col) const { return i64(col) != 0; }
  double f64(int col) const;
  std::string text(int col) const;
  std::string blob(int col) const;  // a BYTEA column
  bool is_null(int col) const;

 private:
  struct Param {
    std::string value;
    unsigned type = 0;  // a pg_type oid
    int format = 0;     // 0 text, 1 binary
    bool null = true;
  };
  Param& slot(int i);
  void execute();

  Db* db_;
  std::string sql_;
  std::vector<Param> params_;
  PGresult* res_ = nullptr;
  int row_ = -1;
  std::int64_t changes_ = 0;
  std::int64_t fence_ = 0;
};

class Db {
 public:
  // Connects with a libpq connection string or URL (postgresql://user@host/db?...), as
  // `application_name` (what pg_stat_activity shows for the connection).
  static Result<std::unique_ptr<Db>> open(const std::string& url,
                                          const char* application_name = "kfleetd");
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Stmt prepare(const std::string& sql);
  void exec(const std::string& sql);  // one-off statements, several allowed (schema)
  const std::string& where() const { return where_; }  // the URL without its password
  std::int64_t changes() const { return changes_; }    // rows the last statement changed
  std::int64_t last_insert_id();                       // lastval() of this session
  // Every transaction from now on checks kfleet_leader.epoch == epoch (0: no check).
  void set_fence(std::int64_t epoch) { fence_ = epoch; }
  // From now on (and after every reconnect) the session runs with
  // default_transaction_read_only = on, and transactions begin READ ONLY without the write
  // lock: the server refuses every write (SQLSTATE 25006). A standby kfleetd's store.
  void set_read_only();
  bool read_only() const { return read_only_; }

  // Runs f (returning Result<T>) inside BEGIN ... COMMIT holding the write lock; an error
  // result or a failure rolls everything back.
  template <class F>
  auto transaction(F&& f) -> decltype(f()) {
    try {
      begin();
    } catch (const DbError& e) {
      return failure(e);
    }
    try {
      auto r = f();
      if (r.ok()) {
        exec("COMMIT");
      } else {
        rollback();
      }
      return r;
    } catch (const DbError& e) {
      rollback();
      return failure(e);
    } catch (const std::exception& e) {
      rollback();
      return make_error(Errc::internal, std::string("store: ") + e.what());
    }
  }

  // A dropped connection (server restart, network) is reopened here, once per call; true if
  // the connection is usable.
  bool ensure_connected();
  bool broken() const { return PQstatus(conn_) != CONNECTION_OK; }

  // For Stmt: runs a statement, preparing it on this connection first if needed.
  PGresult* run_prepared(const std::string& sql, const std::vector<unsigned>& types,
                         const std::vector<const char*>& values, const std::vector<int>& lengths,
                         const std::vector<int>& formats);

 private:
  Db(PGconn* c, std::string where) : conn_(c), where_(std::move(where)) {}
  void begin();
  void rollback();
  Error failure(const DbError& e) const;

  PGconn* conn_;
  std::string where_;
  // key: the SQL and its parameter types -> the server-side statement's name
  std::unordered_map<std::string, std::string> prepared_;
  int next_name_ = 0;
  std::int64_t changes_ = 0;
  std::int64_t fence_ = 0;
  bool read_only_ = false;
};

// The SQLSTATE of a write in a read-only transaction.
inline constexpr const char* kReadOnlyState = "25006";

// Rewrites `?` placeholders (outside quotes) to $1, $2, ...
std::string number_placeholders(const std::string& sql);

std::string dump_json(const nlohmann::json& j);
nlohmann::json parse_json(const std::string& s);  // "" or unparsable -> null

// Ends the process when a store call that cannot return an error fails: exit 3 if this kfleetd
// was fenced off by another leader, else 4 (see pg_db.cpp).
[[noreturn]] void die(const DbError& e, const char* what);

}  // namespace kfleet::store::pg
