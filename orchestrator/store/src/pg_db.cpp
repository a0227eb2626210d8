#include "pg_db.hpp"

#include "kfleet/store/postgres.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace kfleet::store::pg {
namespace {

constexpr unsigned kInt8 = 20, kText = 25, kFloat8 = 701, kBytea = 17;

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

std::string number_placeholders(const std::string& sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int n = 0;
  char quote = 0;
  for (char ch : sql) {
    if (quote) {
      if (ch == quote) quote = 0;
      out += ch;
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      out += ch;
    } else if (ch == '?') {
      out += '$';
      out += std::to_string(++n);
    } else {
      out += ch;
    }
  }
  return out;
}

// --- Stmt

Stmt::Stmt(Stmt&& o) noexcept
    : db_(o.db_),
      sql_(std::move(o.sql_)),
      params_(std::move(o.params_)),
      res_(std::exchange(o.res_, nullptr)),
      row_(o.row_),
      changes_(o.changes_) {}

Stmt::~Stmt() {
  if (res_) PQclear(res_);
}

Stmt::Param& Stmt::slot(int i) {
  if (i < 1) throw DbError{"", "bind index " + std::to_string(i) + " out of range"};
  if (params_.size() < static_cast<std::size_t>(i)) params_.resize(static_cast<std::size_t>(i));
  return params_[static_cast<std::size_t>(i - 1)];
}

Stmt& Stmt::bind(int i, std::int64_t v) {
  auto& p = slot(i);
  p.value = std::to_string(v);
  p.type = kInt8;
  p.format = 0;
  p.null = false;
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  auto& p = slot(i);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  p.value = buf;
  p.type = kFloat8;
  p.format = 0;
  p.null = false;
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
  auto& p = slot(i);
  p.value.assign(v.data(), v.size());
  p.type = kText;
  p.format = 0;
  p.null = false;
  return *this;
}

Stmt& Stmt::bind(int i, Blob v) {
  auto& p = slot(i);
  p.value.assign(v.bytes.data(), v.bytes.size());
  p.type = kBytea;
  p.format = 1;
  p.null = false;
  return *this;
}

Stmt& Stmt::bind(int i, std::nullopt_t) {
  auto& p = slot(i);
  p.value.clear();
  p.type = kText;
  p.format = 0;
  p.null = true;
  return *this;
}

void Stmt::execute() {
  if (res_) {
    PQclear(res_);
    res_ = nullptr;
  }
  std::vector<unsigned> types;
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  types.reserve(params_.size());
  values.reserve(params_.size());
  lengths.reserve(params_.size());
  formats.reserve(params_.size());
  for (const auto& p : params_) {
    types.push_back(p.type);
    values.push_back(p.null ? nullptr : p.value.c_str());
    lengths.push_back(static_cast<int>(p.value.size()));
    formats.push_back(p.format);
  }
  res_ = db_->run_prepared(sql_, types, values, lengths, formats);
  row_ = -1;
  const char* n = PQcmdTuples(res_);
  changes_ = (n && *n) ? std::strtoll(n, nullptr, 10) : 0;
}

bool Stmt::step() {
  if (!res_) execute();
  ++row_;
  return row_ < PQntuples(res_);
}

void Stmt::reset() {
  if (res_) {
    PQclear(res_);
    res_ = nullptr;
  }
  row_ = -1;
}

void Stmt::run() { execute(); }

bool Stmt::is_null(int col) const { return PQgetisnull(res_, row_, col) != 0; }

std::int64_t Stmt::i64(int col) const {
  const char* v = PQgetvalue(res_, row_, col);
  if (!v || !*v) return 0;
  if (v[0] == 't' && v[1] == 0) return 1;  // a boolean expression
  if (v[0] == 'f' && v[1] == 0) return 0;
  return std::strtoll(v, nullptr, 10);
}

double Stmt::f64(int col) const {
  const char* v = PQgetvalue(res_, row_, col);
  return (v && *v) ? std::strtod(v, nullptr) : 0.0;
}

std::string Stmt::text(int col) const {
  return std::string(PQgetvalue(res_, row_, col),
                     static_cast<std::size_t>(PQgetlength(res_, row_, col)));
}

std::string Stmt::blob(int col) const {
  const auto* v = reinterpret_cast<const unsigned char*>(PQgetvalue(res_, row_, col));
  std::size_t n = 0;
  unsigned char* raw = PQunescapeBytea(v, &n);
  if (!raw) throw DbError{"", "cannot decode a BYTEA value"};
  std::string out(reinterpret_cast<const char*>(raw), n);
  PQfreemem(raw);
  return out;
}

// --- Db

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
    // Quiet NOTICEs (CREATE ... IF NOT EXISTS) and UTC timestamps; the store keeps ms itself.
    db->exec("SET client_min_messages = warning");
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
    exec("SET client_min_messages = warning");
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
  if (it == prepared_.end()) {
    std::string name = "k" + std::to_string(++next_name_);
    static_assert(sizeof(unsigned) == sizeof(Oid));
    PGresult* r = PQprepare(conn_, name.c_str(), number_placeholders(sql).c_str(),
                            static_cast<int>(types.size()),
                            reinterpret_cast<const Oid*>(types.data()));
    check(conn_, r, "prepare " + sql);
    PQclear(r);
    it = prepared_.emplace(std::move(key), std::move(name)).first;
  }
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

void Db::exec(const std::string& sql) {
  PGresult* r = PQexec(conn_, sql.c_str());
  check(conn_, r, sql.substr(0, 60));
  PQclear(r);
}

void Db::begin() {
  static const std::string lock =
      "BEGIN; SELECT pg_advisory_xact_lock(" + std::to_string(kWriteLockKey) + ")";
  static const std::string fenced = lock + "; SELECT epoch FROM kfleet_leader WHERE id = 1";
  if (!ensure_connected()) throw_conn(conn_, "reconnecting to " + where_);
  if (PQtransactionStatus(conn_) != PQTRANS_IDLE) rollback();  // never nest in a leftover one
  if (read_only_) {
    // A standby takes no write lock (it would only hold the leader's writers up): its
    // transaction reads a snapshot, and the server refuses the first write in it.
    exec("BEGIN READ ONLY");
    return;
  }
  auto start = [&] {
    PGresult* r = PQexec(conn_, (fence_ ? fenced : lock).c_str());
    check(conn_, r, "BEGIN");
    std::int64_t epoch = 0;
    if (fence_ && PQntuples(r) > 0) epoch = std::strtoll(PQgetvalue(r, 0, 0), nullptr, 10);
    PQclear(r);
    if (fence_ && epoch != fence_) {
      rollback();
      throw DbError{kNotLeaderState,
                    "this kfleetd is no longer the leader (its epoch is " +
                        std::to_string(fence_) + ", the database's " + std::to_string(epoch) +
                        "): another kfleetd took over"};
    }
  };
  try {
    start();
  } catch (const DbError& e) {
    // A connection the server dropped (restart, idle timeout) shows only when used: reopen it
    // once; nothing of this transaction ran yet.
    if (e.sqlstate == kNotLeaderState || !broken() || !ensure_connected()) throw;
    start();
  }
}

void Db::rollback() {
  if (PQstatus(conn_) != CONNECTION_OK) return;
  if (PQtransactionStatus(conn_) != PQTRANS_IDLE) {
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
