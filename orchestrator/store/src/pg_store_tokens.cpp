// API tokens (hashes only) and the audit log.
#include "pg_store.hpp"

namespace kfleet::store::pg {

namespace {

constexpr const char* kTokenColumns =
    "id, \"user\", scope, token_hash, prefix, note, created_by, created_ms, revoked_ms";

ApiToken read_token(const Stmt& q) {
  ApiToken t;
  t.id = q.i64(0);
  t.user = q.text(1);
  t.scope = q.text(2);
  t.token_hash = q.text(3);
  t.prefix = q.text(4);
  t.note = q.text(5);
  t.created_by = q.text(6);
  t.created_ms = q.i64(7);
  t.revoked_ms = q.i64(8);
  return t;
}

}  // namespace

Result<ApiToken> PgStore::create_token(const ApiToken& t, TimeMs now) {
  if (t.user.empty() || t.scope.empty() || t.token_hash.size() != 64)
    return make_error(Errc::invalid_argument, "a token needs a user, a scope and a SHA-256 hash");
  return db_->transaction([&]() -> Result<ApiToken> {
    auto q = db_->prepare("SELECT 1 FROM api_tokens WHERE token_hash = ?");
    q.args(t.token_hash);
    if (q.step()) return make_error(Errc::conflict, "this token exists already");
    db_->prepare("INSERT INTO api_tokens (\"user\", scope, token_hash, prefix, note, created_by, "
                 "created_ms, revoked_ms) VALUES (?, ?, ?, ?, ?, ?, ?, 0)")
        .args(t.user, t.scope, t.token_hash, t.prefix, t.note, t.created_by, now)
        .run();
    ApiToken out = t;
    out.id = db_->last_insert_id();
    out.created_ms = now;
    out.revoked_ms = 0;
    return out;
  });
}

std::optional<ApiToken> PgStore::find_token_by_hash(const std::string& hash) {
  static const std::string sql =
      std::string("SELECT ") + kTokenColumns + " FROM api_tokens WHERE token_hash = ?";
  return or_die("find_token_by_hash", [&]() -> std::optional<ApiToken> {
    auto q = db_->prepare(sql);
    q.args(hash);
    if (!q.step()) return std::nullopt;
    return read_token(q);
  });
}

std::vector<ApiToken> PgStore::list_tokens() {
  static const std::string sql =
      std::string("SELECT ") + kTokenColumns + " FROM api_tokens ORDER BY id";
  return or_die("list_tokens", [&] {
    auto q = db_->prepare(sql);
    std::vector<ApiToken> out;
    while (q.step()) out.push_back(read_token(q));
    return out;
  });
}

Result<ApiToken> PgStore::revoke_token(std::int64_t id, TimeMs now) {
  static const std::string sql =
      std::string("SELECT ") + kTokenColumns + " FROM api_tokens WHERE id = ?";
  return db_->transaction([&]() -> Result<ApiToken> {
    auto q = db_->prepare(sql);
    q.args(id);
    if (!q.step()) return make_error(Errc::not_found, "no token " + std::to_string(id));
    ApiToken t = read_token(q);
    if (t.revoked_ms == 0) {
      db_->prepare("UPDATE api_tokens SET revoked_ms = ? WHERE id = ?").args(now, id).run();
      t.revoked_ms = now;
    }
    return t;
  });
}

Result<void> PgStore::append_audit(const std::string& user, const std::string& action,
                                       const nlohmann::json& data, TimeMs now) {
  return db_->transaction([&]() -> Result<void> {
    db_->prepare("INSERT INTO audit_log (ts_ms, \"user\", action, data) VALUES (?, ?, ?, ?)")
        .args(now, user, action, dump_json(data))
        .run();
    return {};
  });
}

std::vector<AuditRecord> PgStore::audit_log(int limit) {
  return or_die("audit_log", [&] {
    auto q = db_->prepare(
        "SELECT id, ts_ms, \"user\", action, data FROM audit_log ORDER BY id DESC LIMIT ?");
    q.args(limit);
    std::vector<AuditRecord> out;
    while (q.step()) {
      AuditRecord a;
      a.id = q.i64(0);
      a.ts_ms = q.i64(1);
      a.user = q.text(2);
      a.action = q.text(3);
      a.data = parse_json(q.text(4));
      if (!a.data.is_object()) a.data = nlohmann::json::object();
      out.push_back(std::move(a));
    }
    return out;
  });
}

}  // namespace kfleet::store::pg
