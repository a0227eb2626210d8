#include "sqlite_db.hpp"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>

namespace kfleet::store::sqlite {
namespace {

[[noreturn]] void throw_db(sqlite3* db, int rc, const std::string& what) {
  throw DbError{rc, what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc))};
}

// SQLite's own default: a checkpoint once the WAL holds this many pages (4 MB).
constexpr int kCheckpointPages = 1000;
// A checkpoint on another connection cannot let the WAL start over while the writer keeps
// committing: what was committed while it copied is left, so the WAL only grows. Past this
// size the writer copies that rest itself (the background checkpoint has copied and synced
// the bulk), and its next commit starts the WAL from the beginning again.
constexpr int kCatchUpPages = 4000;

}  // namespace

// Copies the WAL back into the database file on a thread and a connection of its own. Left to
// SQLite's default, the connection that commits checkpoints every 1,000 pages: two fsyncs and
// ~4 MB of copying, 5-10 ms on the one thread that serves the API, every few hundred commits,
// and that stall was the tail of submit-to-lease latency. Commits still write (and, with
// synchronous=FULL, fsync) the WAL exactly as before, so what a commit makes durable does not
// change; only the later copy into the main file moved. PASSIVE checkpoints never wait for or
// block the writer.
class Checkpointer {
 public:
  static std::unique_ptr<Checkpointer> start(const std::string& path, bool synchronous_full) {
    if (!sqlite3_threadsafe()) return nullptr;  // a second thread would need a threadsafe build
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      return nullptr;  // the committing connection goes on checkpointing itself
    }
    // The checkpoint's fsyncs follow this connection's level: the same as the writer's.
    const char* sync = synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
    if (sqlite3_exec(db, sync, nullptr, nullptr, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      return nullptr;
    }
    std::unique_ptr<Checkpointer> c(new Checkpointer(db, path));
    try {
      c->thread_ = std::thread([p = c.get()] {
        pthread_setname_np(pthread_self(), "kfleetd-wal");  // its own line in top and perf
        p->loop();
      });
    } catch (const std::system_error&) {
      return nullptr;  // no thread to be had: the destructor closes the connection
    }
    return c;
  }

  ~Checkpointer() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> l(m_);
        stop_ = true;
      }
      cv_.notify_one();
      thread_.join();
    }
    sqlite3_close(db_);
  }

  // The WAL's size after the writer's last commit.
  void committed(int wal_pages) { wal_pages_.store(wal_pages, std::memory_order_release); }

  // Whether a checkpoint is asked for or running.
  bool busy() const { return pending_.load(std::memory_order_acquire); }

  // From the commit hook: cheap when a checkpoint is already asked for.
  void nudge() {
    if (pending_.exchange(true, std::memory_order_acq_rel)) return;
    {
      std::lock_guard<std::mutex> l(m_);
      wanted_ = true;
    }
    cv_.notify_one();
  }

 private:
  Checkpointer(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  void loop() {
    std::unique_lock<std::mutex> l(m_);
    for (;;) {
      cv_.wait(l, [&] { return wanted_ || stop_; });
      if (stop_) return;
      wanted_ = false;
      l.unlock();
      // What the writer commits while a pass copies is left for the next pass; a few in a row
      // catch up with it between two commits, and the WAL starts over at the next commit.
      for (int pass = 0; pass < 4; ++pass) {
        int log = 0, done = 0;
        const int rc =
            sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
          std::string msg = sqlite3_errmsg(db_);
          if (msg != last_error_)
            std::fprintf(stderr, "kfleet store: checkpoint of %s failed: %s\n", path_.c_str(),
                         msg.c_str());
          last_error_ = std::move(msg);
        }
        const int now = wal_pages_.load(std::memory_order_acquire);
        if (rc != SQLITE_OK || now <= done || now >= kCatchUpPages) break;
      }
      pending_.store(false, std::memory_order_release);
      l.lock();
    }
  }

  sqlite3* db_;
  std::string path_;
  std::mutex m_;
  std::condition_variable cv_;
  bool wanted_ = false;
  bool stop_ = false;
  std::atomic<bool> pending_{false};
  std::atomic<int> wal_pages_{0};
  std::string last_error_;
  std::thread thread_;
};

Db::Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

int Db::on_commit(void* self, sqlite3* db, const char* name, int wal_pages) {
  auto* d = static_cast<Db*>(self);
  if (d->checkpointer_) d->checkpointer_->committed(wal_pages);
  if (wal_pages < kCheckpointPages) {
    d->nudged_at_ = 0;
    return SQLITE_OK;
  }
  if (!d->checkpointer_ || wal_pages >= kCatchUpPages) {
    // Not asked again from here on, the checkpointer goes idle after its pass, and the
    // commit after that copies the rest.
    if (d->checkpointer_ && d->checkpointer_->busy()) return SQLITE_OK;
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    return SQLITE_OK;
  }
  // Another pass once the WAL has grown by a quarter of the interval: one per commit would
  // copy a few pages and sync both files each time, for nothing.
  if (wal_pages >= d->nudged_at_ + kCheckpointPages / 4) {
    d->nudged_at_ = wal_pages;
    d->checkpointer_->nudge();
  }
  return SQLITE_OK;
}

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

double Stmt::f64(int col) const { return sqlite3_column_double(s_, col); }

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
  // The store's SQL, shared with PostgreSQL (shared/*.inc), uses INSERT ... RETURNING.
  if (sqlite3_libversion_number() < kMinSqliteVersion) {
    return make_error(Errc::unavailable,
                      std::string("kfleetd needs SQLite 3.35 or later; this process loaded ") +
                          sqlite3_libversion() + " (upgrade libsqlite3)");
  }
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
    bool wal = false;
    {
      auto q = db->prepare("PRAGMA journal_mode");
      wal = q.step() && q.text(0) == "wal";
    }
    if (wal) {
      db->checkpointer_ = Checkpointer::start(path, synchronous_full);
      // Replaces SQLite's own autocheckpoint hook (see Checkpointer).
      sqlite3_wal_hook(raw, &Db::on_commit, db.get());
    }
  } catch (const DbError& e) {
    return make_error(Errc::unavailable, "cannot configure the database " + path + ": " +
                                             e.message);
  }
  return db;
}

Db::~Db() {
  checkpointer_.reset();  // first: the last close checkpoints and removes the WAL
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

void die(const DbError& e, const char* what) {
  std::fprintf(stderr, "kfleet store: %s failed: %s\n", what, e.message.c_str());
  std::abort();
}

}  // namespace kfleet::store::sqlite
