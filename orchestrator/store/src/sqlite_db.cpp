#include "sqlite_db.hpp"

#include <cstdio>
#include <cstdlib>

namespace kfleet::store::sqlite {
namespace {

[[noreturn]] void throw_db(sqlite3* db, int rc, const std::string& what) {
  throw DbError{rc, what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc))};
}

}  // namespace

Stmt::~Stmt() {
  if (s_) {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
}

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

Stmt& Stmt::bind(int i, std::int64_t v) {
  int rc = sqlite3_bind_int64(s_, i, v);
  if (rc != SQLITE_OK) throw_db(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  int rc = sqlite3_bind_double(s_, i, v);
  if (rc != SQLITE_OK) throw_db(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
  int rc = sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) throw_db(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind(int i, Blob v) {
  int rc = sqlite3_bind_blob64(s_, i, v.bytes.data(), v.bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) throw_db(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind(int i, std::nullopt_t) {
  int rc = sqlite3_bind_null(s_, i);
  if (rc != SQLITE_OK) throw_db(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind(int i, const std::optional<std::string>& v) {
  return v ? bind(i, std::string_view(*v)) : bind(i, std::nullopt);
}

bool Stmt::step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw_db(db_, rc, sqlite3_sql(s_) ? sqlite3_sql(s_) : "step");
}

void Stmt::run() {
  while (step()) {
  }
}

std::int64_t Stmt::i64(int col) const { return sqlite3_column_int64(s_, col); }

std::string Stmt::text(int col) const {
  const auto* p = sqlite3_column_text(s_, col);
  if (!p) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<std::size_t>(sqlite3_column_bytes(s_, col)));
}

std::string Stmt::blob(int col) const {
  const void* p = sqlite3_column_blob(s_, col);
  if (!p) return {};
  return std::string(static_cast<const char*>(p),
                     static_cast<std::size_t>(sqlite3_column_bytes(s_, col)));
}

bool Stmt::is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

Result<std::unique_ptr<Db>> Db::open(const std::string& path, bool synchronous_full) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return make_error(Errc::unavailable, "cannot open the database " + path + ": " + msg +
                                             " (check the path and its directory's permissions)");
  }
  std::unique_ptr<Db> db(new Db(raw, path));
  try {
    // The busy timeout covers another process (a backup, the CLI) briefly holding the lock.
    sqlite3_busy_timeout(raw, 5000);
    db->exec("PRAGMA journal_mode=WAL");
    db->exec("PRAGMA foreign_keys=ON");
    db->exec(synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  } catch (const DbError& e) {
    return make_error(Errc::unavailable, "cannot configure the database " + path + ": " +
                                             e.message);
  }
  return db;
}

Db::~Db() {
  for (auto& [sql, s] : cache_) sqlite3_finalize(s);
  sqlite3_close(db_);
}

Stmt Db::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK) throw_db(db_, rc, "prepare " + sql);
    it = cache_.emplace(sql, s).first;
  }
  return Stmt(db_, it->second);
}

void Db::exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw DbError{rc, msg};
  }
}

void Db::rollback() {
  if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

Error Db::failure(const DbError& e) const {
  int primary = e.rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    return make_error(Errc::unavailable, "the database " + path_ +
                                             " is locked by another process: " + e.message);
  if (primary == SQLITE_FULL)
    return make_error(Errc::unavailable, "the disk holding " + path_ + " is full: " + e.message);
  if (primary == SQLITE_CONSTRAINT) return make_error(Errc::conflict, e.message);
  return make_error(Errc::internal, "database " + path_ + ": " + e.message);
}

std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json parse_json(const std::string& s) {
  if (s.empty()) return nullptr;
  auto j = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return nullptr;
  return j;
}

void die(const DbError& e, const char* what) {
  std::fprintf(stderr, "kfleet store: %s failed: %s\n", what, e.message.c_str());
  std::abort();
}

}  // namespace kfleet::store::sqlite
