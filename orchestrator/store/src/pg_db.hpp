#pragma once
// A thin libpq connection with the same shape as sqlite_db.hpp: statements written with `?`
// placeholders (rewritten to $1..$n), prepared once per connection on first use with the
// parameter types of their first binding, typed reads, and a transaction helper. Every
// transaction takes one transaction-scoped advisory lock first, so writers from any number of
// connections (and kfleetd processes) run one after another, as SQLite's BEGIN IMMEDIATE does:
// every check-then-write in the store sees the latest committed state, and event ids taken from
// the counters row stay gap-free and in commit order. Failures travel as DbError inside the
// store and are turned into Result errors at the Store method boundary.
//
// Round trips, not the server's work, are what a control-plane call costs on PostgreSQL (see
// the store's README, "Transactions"). Inside a transaction nothing goes to the server until a
// result is needed: BEGIN, the lock and the fencing check, writes whose rows nobody reads
// (Stmt::run) and reads sent ahead (Stmt::send) wait in a queue and travel with the next read
// in one libpq pipeline; the COMMIT travels with the last writes. The fencing check runs in the
// server (kfleet_lock_and_fence(), a migration step), so a deposed leader's queued writes fail there,
// before its COMMIT, without a round trip of their own. A call still returns only after its
// COMMIT's result came back.
#include <chrono>
#include <cstdint>
#include <functional>
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
#include "shared/json_text.hpp"

namespace kfleet::store::pg {

// The key of the advisory lock every store transaction holds (ASCII "kfleetwr").
inline constexpr std::int64_t kWriteLockKey = 0x6b666c6565747772;
// The key of the session advisory lock the leader kfleetd holds (ASCII "kfleetld").
inline constexpr std::int64_t kLeaderLockKey = 0x6b666c6565746c64;
// The SQLSTATE a fenced write fails with when another kfleetd has taken over.
inline constexpr const char* kNotLeaderState = "KF001";

// The SQL the two backends spell differently (the store's shared text, shared/*.inc, uses it).
inline constexpr const char* kGreatest = "GREATEST";  // the larger of two values
// An agent of the live fleet (not retired), spelled as the partial index agents_live spells
// it, so the planner reads the live fleet from that index (migration 9).
inline constexpr const char* kLiveAgent = "NOT retired";

struct Blob {
  std::string_view bytes;
};

// One-dimensional array parameters (bigint[], text[]), sent in PostgreSQL's binary array
// format: no element is quoted by kfleetd or parsed by the server. Text must hold no NUL
// byte (the server refuses it).
struct Int8Array {
  const std::vector<std::int64_t>& items;
};
struct TextArray {
  const std::vector<std::string_view>& items;
};

struct DbError {
  std::string sqlstate;  // e.g. "23505" (unique violation); "" when the connection failed
  std::string message;
};

class Db;

// The pg_type oids of what a statement binds.
inline constexpr unsigned kInt8 = 20, kText = 25, kFloat8 = 701, kBytea = 17, kInt8Array = 1016,
                          kTextArray = 1009;

// One execution of a cached statement. Binds are by 1-based index, as in SQLite.
class Stmt {
 public:
  Stmt(Db* db, std::string sql) : db_(db), sql_(std::move(sql)) {}
  Stmt(Stmt&& o) noexcept;
  Stmt& bind(int i, const Int8Array& v);
  Stmt& bind(int i, const TextArray& v);

#include "shared/stmt_binds.inc"

  bool step();   // runs the statement on the first call (and what is queued before it); true
                 // while a row is ready
  void reset();  // ready to bind and run again
  // Runs a statement and ignores any rows. Inside a transaction it is queued and its errors
  // show at the next round trip (a read, changes(), the COMMIT), still inside the transaction.
  void run();
  // Queues a read inside a transaction: it goes to the server with the next round trip, and
  // step() then reads its rows. Outside one it is the same as the first step().
  void send();
  // Its rows came back (it ran and succeeded); false while queued or after a failure.
  bool answered() const { return res_ != nullptr && !queued_; }

  std::int64_t i64(int col) const;
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
  bool queued_ = false;  // in the Db's queue, waiting for its result

  friend class Db;
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
  std::int64_t changes();  // rows the last statement changed (sends what is queued first)
  std::int64_t last_insert_id();                       // lastval() of this session
  // Every transaction from now on checks kfleet_leader.epoch == epoch (0: no check).
  void set_fence(std::int64_t epoch) { fence_ = epoch; }
  // From now on (and after every reconnect) the session runs with
  // default_transaction_read_only = on, and transactions begin READ ONLY without the write
  // lock: the server refuses every write (SQLSTATE 25006). A standby kfleetd's store.
  void set_read_only();
  bool read_only() const { return read_only_; }

  // Transactions begin with the write lock (READ ONLY on a standby: set_read_only()).
#include "shared/transaction.inc"

  // A dropped connection (server restart, network) is reopened here, once per call; true if
  // the connection is usable.
  bool ensure_connected();
  bool broken() const { return PQstatus(conn_) != CONNECTION_OK; }

  // For Stmt: runs a statement, preparing it on this connection first if needed.
  PGresult* run_prepared(const std::string& sql, const std::vector<unsigned>& types,
                         const std::vector<const char*>& values, const std::vector<int>& lengths,
                         const std::vector<int>& formats);
  // For Stmt: queues a statement (reader: the Stmt that gets its result, or null), and sends
  // the queue (ending with reader's statement, if given) in one round trip.
  void enqueue(Stmt* reader, const std::string& sql, const std::vector<unsigned>& types,
               std::vector<std::string> values, std::vector<char> nulls,
               std::vector<int> formats);
  void flush();
  void forget(Stmt* reader);  // a queued reader went away
  void moved(Stmt* from, Stmt* to);
  bool in_transaction() const { return in_tx_; }
  // The next read is the call's last: the transaction's COMMIT is queued right behind it and
  // travels in the same round trip. For a call whose remaining steps cannot fail or refuse
  // (it reads what it wrote and returns). The call still returns after the COMMIT's result
  // came back; a failure before it (the fence included) skips it and rolls back.
  void commit_with_next_read() {
    if (in_tx_) commit_next_ = true;
  }
  // Queues the COMMIT now, behind what is queued (reads sent ahead included); nothing may be
  // queued after it. The same rules as commit_with_next_read.
  void queue_commit_now();

  // Runs f, whose reads (Stmt::send, then step) outside a transaction go to the server in one
  // round trip: the first step() sends every read sent before it, as one pipeline whose
  // statements the server runs as one implicit transaction (one snapshot). For reads only: no
  // write lock, no fencing check, as for any read outside a transaction.
  template <class F>
  auto pipelined_reads(F&& f) -> decltype(f()) {
    struct Scope {
      Db& db;
      ~Scope() { db.end_pipelined_reads(); }
    } scope{*this};
    begin_pipelined_reads();
    return f();
  }

  // Reads to send right behind the COMMIT of the next transaction that queues one, in its
  // last round trip: queue_reads sends them (Stmt::send) when the COMMIT is queued. They run
  // after the commit, in a snapshot of their own; when the transaction fails they do not run
  // (their statements are not answered()). Once; replaced by the next call.
  void read_after_next_commit(std::function<void()> queue_reads) {
    after_commit_ = std::move(queue_reads);
  }

  // Round trips to the server since the connection opened (what the bench and tests count).
  std::int64_t round_trips() const { return round_trips_; }
  // Nanoseconds the caller's thread spent blocked in those round trips (sending, the server's
  // work and its commit's flush, reading the results): on kfleetd the control plane's one thread,
  // which serves no request meanwhile (/metrics' kfleet_store_wait_seconds_total).
  std::int64_t wait_ns() const {
    std::int64_t ns = 0;
    for (const auto& [kind, w] : by_kind_) ns += w.wait_ns;
    return ns;
  }
  // That time by what each round trip carried (statement_kind of its first statement, with
  // " +COMMIT" when its commit went along): round trips, nanoseconds, and those of 1 ms or more.
  struct KindWait {
    std::int64_t round_trips = 0, wait_ns = 0, slow = 0;
  };
  const std::unordered_map<std::string, KindWait>& waits_by_kind() const { return by_kind_; }

 private:
  struct Pending {
    std::string sql;  // with `?` placeholders; "" for a plain command (cmd)
    std::string cmd;  // BEGIN, COMMIT, the lock: sent without parameters, never prepared
    std::vector<unsigned> types;
    std::vector<std::string> values;
    std::vector<char> nulls;
    std::vector<int> formats;
    Stmt* reader = nullptr;
  };

  Db(PGconn* c, std::string where) : conn_(c), where_(std::move(where)) {}
  // Queues the COMMIT, then the reads read_after_next_commit() asked for behind it.
  void push_commit();
  void begin_pipelined_reads();
  void end_pipelined_reads();
  void begin();
  void commit();
  void rollback();
  // One pipeline: the batch, then a sync; hands readers their results, throws the first error.
  void send_batch(std::vector<Pending>& batch);
  Error failure(const DbError& e) const;

  PGconn* conn_;
  std::string where_;
  // key: the SQL and its parameter types -> the server-side statement's name
  std::unordered_map<std::string, std::string> prepared_;
  int next_name_ = 0;
  std::int64_t changes_ = 0;
  std::int64_t fence_ = 0;
  bool read_only_ = false;
  std::vector<Pending> queue_;
  bool in_tx_ = false;         // inside transaction(), between begin and commit or rollback
  bool commit_next_ = false;    // commit_with_next_read(): the COMMIT goes behind the next read
  bool commit_queued_ = false;  // it did: the COMMIT is queued or sent
  std::int64_t round_trips_ = 0;
  std::unordered_map<std::string, KindWait> by_kind_;
  // Adds the time from its making to its end to `kind`'s entry of by_kind_.
  struct Waiting {
    Waiting(Db* d, std::string k) : db(d), kind(std::move(k)), t0(std::chrono::steady_clock::now()) {}
    ~Waiting() {
      const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now() - t0).count();
      KindWait& k = db->by_kind_[kind];
      ++k.round_trips;
      k.wait_ns += ns;
      if (ns >= 1'000'000) ++k.slow;
    }
    Db* db;
    std::string kind;
    std::chrono::steady_clock::time_point t0;
  };
  std::function<void()> after_commit_;  // read_after_next_commit()
  bool after_commit_open_ = false;      // its reads are being queued behind the COMMIT
};

// The SQLSTATE of a write in a read-only transaction.
inline constexpr const char* kReadOnlyState = "25006";

// What a statement does, for the waits by kind: its verb and the table it reads or writes,
// "INSERT events", "SELECT jobs", "UPDATE agents"; a command alone ("BEGIN", "COMMIT").
std::string statement_kind(std::string_view sql);

// Rewrites `?` placeholders (outside quotes) to $1, $2, ...
std::string number_placeholders(const std::string& sql);

// Ends the process when a store call that cannot return an error fails: exit 3 if this kfleetd
// was fenced off by another leader, else 4 (see pg_db.cpp).
[[noreturn]] void die(const DbError& e, const char* what);

}  // namespace kfleet::store::pg
