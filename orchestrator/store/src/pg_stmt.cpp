// A statement of the PostgreSQL backend (pg_db.hpp): SQLite's `?` placeholders numbered for
// libpq, the statement's kind for the store-wait metric, and the Stmt's binds and rows. The
// connection, its pipeline and its transactions are pg_db.cpp's.
#include "pg_db.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace kfleet::store::pg {

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

std::string statement_kind(std::string_view sql) {
  // Words, upper-cased, without the punctuation around a table name.
  std::size_t at = 0;
  auto apart = [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')' || c == ',' || c == ';' || c == '=';
  };
  auto word = [&]() {
    while (at < sql.size() && apart(sql[at])) ++at;
    std::string w;
    while (at < sql.size() && !apart(sql[at]))
      w += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[at++])));
    std::erase(w, '"');
    return w;
  };
  auto after = [&](std::string_view key) -> std::string {
    for (std::string w = word(); !w.empty(); w = word())
      if (w == key) return word();
    return "";
  };
  const std::string verb = word();
  const std::size_t after_verb = at;
  std::string table;
  if (verb == "INSERT") table = after("INTO");
  else if (verb == "UPDATE") table = word();
  else if (verb == "DELETE" || verb == "SELECT" || verb == "WITH") table = after("FROM");
  if (table.empty() && verb == "SELECT") {  // a function's call: SELECT lastval(), the fence
    at = after_verb;
    table = word();
  }
  std::transform(table.begin(), table.end(), table.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return table.empty() ? verb : verb + " " + table;
}


Stmt::Stmt(Stmt&& o) noexcept
    : db_(o.db_),
      sql_(std::move(o.sql_)),
      params_(std::move(o.params_)),
      res_(std::exchange(o.res_, nullptr)),
      row_(o.row_),
      queued_(std::exchange(o.queued_, false)) {
  if (queued_) db_->moved(&o, this);
}

Stmt::~Stmt() {
  if (queued_) db_->forget(this);
  if (res_) PQclear(res_);
}

void Stmt::execute() {
  if (res_) {
    PQclear(res_);
    res_ = nullptr;
  }
  row_ = -1;
  if (db_->in_transaction()) {
    send();
    db_->flush();
    if (!res_) throw DbError{"", "no result for " + sql_.substr(0, 60)};
    return;
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
}

void Stmt::send() {
  if (!db_->in_transaction()) {
    if (!res_) execute();
    return;
  }
  if (queued_ || res_) return;
  std::vector<unsigned> types;
  std::vector<std::string> values;
  std::vector<char> nulls;
  std::vector<int> formats;
  for (const auto& p : params_) {
    types.push_back(p.type);
    values.push_back(p.value);
    nulls.push_back(p.null ? 1 : 0);
    formats.push_back(p.format);
  }
  db_->enqueue(this, sql_, types, std::move(values), std::move(nulls), std::move(formats));
  queued_ = true;
}

bool Stmt::step() {
  if (queued_) db_->flush();
  if (!res_) execute();
  ++row_;
  return row_ < PQntuples(res_);
}

void Stmt::reset() {
  if (queued_) db_->forget(this);
  queued_ = false;
  if (res_) {
    PQclear(res_);
    res_ = nullptr;
  }
  row_ = -1;
}

void Stmt::run() {
  if (!db_->in_transaction()) {
    execute();
    return;
  }
  // Nobody reads this statement's rows: it waits for the next round trip.
  std::vector<unsigned> types;
  std::vector<std::string> values;
  std::vector<char> nulls;
  std::vector<int> formats;
  for (auto& p : params_) {
    types.push_back(p.type);
    values.push_back(p.value);
    nulls.push_back(p.null ? 1 : 0);
    formats.push_back(p.format);
  }
  db_->enqueue(nullptr, sql_, types, std::move(values), std::move(nulls), std::move(formats));
}

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

}  // namespace kfleet::store::pg
