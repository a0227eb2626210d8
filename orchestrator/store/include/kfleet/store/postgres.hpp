#pragma once
// The PostgreSQL backend of kfleet::store::Store (libpq). It passes the same contract suite as
// SQLite. Every mutating call is one transaction that first takes a transaction-scoped
// advisory lock, so any number of connections (several kfleetd on one database) write one
// after another and event ids stay gap-free and in commit order.
#include <cstdint>
#include <memory>
#include <string>

#include "kfleet/store/store.hpp"

namespace kfleet::store {

struct PostgresOptions {
  // A libpq URL or connection string: postgresql://user:pass@host:5432/kfleet,
  // postgresql:///kfleet?host=/run/postgresql (a unix socket directory), ...
  std::string url;
  // The leader's fencing number (PostgresLeader::epoch()): when set, every write transaction
  // first checks that no other kfleetd has taken over since, and fails (unavailable) if one has.
  std::int64_t leader_epoch = 0;
  // A standby kfleetd's store: its connection runs with default_transaction_read_only = on
  // (set again after every reconnect) and transactions begin READ ONLY without taking the
  // write lock, so PostgreSQL itself refuses any write (SQLSTATE 25006; the Store call fails
  // with unavailable, or the process exits 4 where a call cannot return an error). It does not
  // migrate: the schema must be at this build's version already (the leader election's own
  // connection migrates at start). pg_stat_activity shows it as `kfleetd-standby`.
  bool read_only = false;
  // What pg_stat_activity shows for a read-only store's connection ("": kfleetd-standby).
  std::string application_name;
};

// Who leads the kfleetd sharing one database.
struct LeaderInfo {
  std::int64_t epoch = 0;  // bumped by every takeover
  std::string url;         // what the leader serves ("" until it listens)
  TimeMs since_ms = 0;
};

// Leadership among several kfleetd on one PostgreSQL database: a session advisory lock on a
// connection of its own, held for the life of the process (the server drops it when the
// connection dies, kill -9 of the process included), and a fencing number in kfleet_leader.
class PostgresLeader {
 public:
  // Connects and migrates the schema; takes nothing yet.
  static Result<std::unique_ptr<PostgresLeader>> connect(const std::string& url);
  ~PostgresLeader();
  PostgresLeader(const PostgresLeader&) = delete;
  PostgresLeader& operator=(const PostgresLeader&) = delete;

  // One attempt: true when this process now leads (the lock is ours and the epoch bumped).
  Result<bool> try_acquire(TimeMs now);
  // Records the URL the leader serves, for the standbys' answers.
  Result<void> set_url(const std::string& url);
  Result<LeaderInfo> current();
  // The leader's check: false once its lock connection is gone or another kfleetd took over.
  bool still_leader();
  std::int64_t epoch() const { return epoch_; }

 private:
  struct Impl;
  explicit PostgresLeader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::int64_t epoch_ = 0;
};

// True for "postgresql://..." and "postgres://..." (what --db takes for this backend).
bool is_postgres_url(const std::string& db);
// The URL as it may be logged: a password in it is replaced by ***.
std::string redact_postgres_url(const std::string& url);
// True when the URL carries a password (which then shows in `ps`; prefer ~/.pgpass).
bool postgres_url_has_password(const std::string& url);
// False when this build has no libpq (configured with -DKFLEET_WITH_POSTGRESQL=OFF).
bool postgres_supported();
// Connects and migrates the schema (refusing one newer than this build knows); read-only:
// connects and checks the schema's version instead.
Result<StorePtr> open_postgres_store(const PostgresOptions& o);

}  // namespace kfleet::store
