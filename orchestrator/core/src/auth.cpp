// Who may call: user tokens (stored as SHA-256 only, with a user and a scope), in-memory
// tokens for tests, agent tokens (from enrol) and the enrolment token; and the audit log.
#include <sys/random.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <stdexcept>

#include "kfleet/common/log.hpp"
#include "kfleet/common/sha256.hpp"
#include "kfleet/core/control_plane.hpp"

namespace kfleet::core {

namespace {

bool equal_ct(const std::string& a, const std::string& b) {  // constant time for equal lengths
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

}  // namespace

const char* to_string(Scope s) {
  switch (s) {
    case Scope::read: return "read";
    case Scope::submit: return "submit";
    case Scope::admin: return "admin";
  }
  return "read";
}

std::optional<Scope> scope_from_string(const std::string& s) {
  if (s == "read") return Scope::read;
  if (s == "submit") return Scope::submit;
  if (s == "admin") return Scope::admin;
  return std::nullopt;
}

std::string random_secret(const std::string& prefix) {
  unsigned char buf[32];
  std::size_t got = 0;
  while (got < sizeof buf) {
    ssize_t n = getrandom(buf + got, sizeof buf - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed: cannot make a token");
    }
    got += static_cast<std::size_t>(n);
  }
  static const char* hex = "0123456789abcdef";
  std::string out = prefix;
  for (unsigned char c : buf) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

void ControlPlane::bootstrap_tokens() {
  for (const auto& t : cfg_.user_tokens)
    if (!t.empty()) static_users_[sha256_hex(t)] = Principal{"static", Scope::submit, 0};
  if (cfg_.admin_token.empty()) return;
  const std::string hash = sha256_hex(cfg_.admin_token);
  if (store_.find_token_by_hash(hash)) return;  // not the first start
  store::ApiToken t;
  t.user = cfg_.admin_user.empty() ? "admin" : cfg_.admin_user;
  t.scope = "admin";
  t.token_hash = hash;
  t.prefix = cfg_.admin_token.substr(0, std::min<std::size_t>(8, cfg_.admin_token.size() / 4));
  t.note = "first admin token (kfleetd --admin-token-file / KFLEET_ADMIN_TOKEN)";
  t.created_by = "kfleetd";
  auto r = store_.create_token(t, clock_->now_ms());
  if (!r) {
    log::error("auth", "cannot store the first admin token: ", r.error().message);
    return;
  }
  audit("kfleetd", "token.create", {{"token_id", r->id}, {"user", r->user}, {"scope", r->scope}});
  log::info("auth", "stored the first admin token (id ", r->id, ", user ", r->user, ")");
}

std::optional<Principal> ControlPlane::user_for_token(const std::string& token) {
  if (token.empty()) return std::nullopt;
  const std::string hash = sha256_hex(token);
  if (auto it = static_users_.find(hash); it != static_users_.end()) return it->second;
  if (!cfg_.read_only)
    if (auto it = user_cache_.find(hash); it != user_cache_.end()) return it->second;
  auto t = store_.find_token_by_hash(hash);
  if (!t || t->revoked_ms != 0 || !equal_ct(t->token_hash, hash)) return std::nullopt;
  auto scope = scope_from_string(t->scope);
  if (!scope) return std::nullopt;
  Principal p{t->user, *scope, t->id};
  // A standby does not cache: the leader may revoke the token at any time.
  if (!cfg_.read_only) {
    std::lock_guard lk(shared_mu_);
    user_cache_[hash] = p;
  }
  return p;
}

std::optional<Principal> ControlPlane::cached_user(const std::string& token) const {
  if (token.empty() || cfg_.read_only) return std::nullopt;
  const std::string hash = sha256_hex(token);
  // static_users_ is filled by start(), before any request is served, and never again.
  if (auto it = static_users_.find(hash); it != static_users_.end()) return it->second;
  std::lock_guard lk(shared_mu_);
  if (auto it = user_cache_.find(hash); it != user_cache_.end()) return it->second;
  return std::nullopt;
}

bool ControlPlane::is_user_token(const std::string& token) {
  return user_for_token(token).has_value();
}

bool ControlPlane::is_fleet_enrol_token(const std::string& token) const {
  return !token.empty() && !cfg_.enrol_token.empty() && equal_ct(cfg_.enrol_token, token);
}

bool ControlPlane::is_enrol_token(const std::string& token) {
  if (is_fleet_enrol_token(token)) return true;
  // Limited tokens are looked up by hash; only "kfe_" secrets can be one.
  return token.rfind("kfe_", 0) == 0 && store_.find_enrol_token_by_hash(sha256_hex(token));
}

Result<NewEnrolToken> ControlPlane::mint_enrol_token(const EnrolTokenRequest& r,
                                                     const std::string& by) {
  if (r.name.empty() || r.name.size() > 100)
    return make_error(Errc::invalid_argument,
                      "an enrolment token needs a name of 1 to 100 characters (what it is for)");
  if (r.uses < 0)
    return make_error(Errc::invalid_argument, "uses must be 0 (any number) or more");
  if (r.expires_in_ms < 0)
    return make_error(Errc::invalid_argument, "the expiry must be 0 (never) or in the future");
  if (r.instance_id.size() > 200)
    return make_error(Errc::invalid_argument, "an instance id has at most 200 characters");
  NewEnrolToken out;
  out.secret = random_secret("kfe_");
  out.record.name = r.name;
  out.record.token_hash = sha256_hex(out.secret);
  out.record.prefix = out.secret.substr(0, 8);
  out.record.instance_id = r.instance_id;
  out.record.max_uses = r.uses;
  out.record.created_by = by;
  const TimeMs now = clock_->now_ms();
  out.record.expires_ms = r.expires_in_ms ? now + r.expires_in_ms : 0;
  auto t = store_.create_enrol_token(out.record, now);
  if (!t) return t.error();
  out.record = *t;
  audit(by, "enrol_token.mint",
        {{"enrol_token_id", t->id}, {"name", t->name}, {"uses", t->max_uses},
         {"expires_ms", t->expires_ms}, {"instance_id", t->instance_id}});
  return out;
}

Result<store::EnrolToken> ControlPlane::revoke_enrol_token(std::int64_t id, const std::string& by) {
  auto t = store_.revoke_enrol_token(id, clock_->now_ms());
  if (!t) return t.error();
  audit(by, "enrol_token.revoke", {{"enrol_token_id", t->id}, {"name", t->name}});
  return t;
}

bool ControlPlane::is_agent_token(std::int64_t agent_id, const std::string& token) {
  if (token.empty()) return false;
  auto it = agent_hash_cache_.find(agent_id);
  if (it == agent_hash_cache_.end()) {
    auto a = store_.get_agent(agent_id);
    if (!a) return false;
    it = agent_hash_cache_.emplace(agent_id, a->token_hash).first;
  }
  return equal_ct(it->second, sha256_hex(token));
}

std::int64_t ControlPlane::agent_for_token(const std::string& token) {
  if (token.empty()) return 0;
  if (cfg_.read_only) {
    // A standby learns of enrolments and retirements only through the store.
    const std::string hash = sha256_hex(token);
    for (const auto& a : store_.list_agents())
      if (a.state != store::AgentState::retired && !a.token_hash.empty() &&
          equal_ct(a.token_hash, hash))
        return a.id;
    return 0;
  }
  auto it = agent_by_hash_.find(sha256_hex(token));
  return it == agent_by_hash_.end() ? 0 : it->second;
}

Result<store::AgentRecord> ControlPlane::retire_agent(std::int64_t id, const std::string& by) {
  auto a = store_.get_agent(id);
  if (!a) return make_error(Errc::not_found, "no agent " + std::to_string(id));
  // Its lease goes back to the queue now, not when the lease would have expired: nothing it
  // posts for that run is accepted any more.
  std::int64_t requeued_run = 0;
  if (a->current_run_id != 0) {
    auto j = store_.expire_run(a->current_run_id,
                               "agent " + std::to_string(id) + " was retired by " + by, clock_->now_ms());
    fleet_.freed(id, a->current_run_id, store::AgentState::lost, clock_->now_ms());
    if (j) {
      requeued_run = a->current_run_id;
      run_agents_.erase(requeued_run);
      remember_pending(*j);
      events_changed();
    } else {
      log::warn("core", "retired agent ", id, ": run ", a->current_run_id, " not requeued: ",
                j.error().message);
    }
  }
  if (auto r = store_.set_agent_state(id, store::AgentState::retired, clock_->now_ms()); !r)
    return r.error();
  // Its token dies with it: forget it everywhere it is looked up.
  agent_by_hash_.erase(a->token_hash);
  agent_hash_cache_[id] = std::string(64, '-');
  if (auto w = waiters_.find(id); w != waiters_.end()) end_wait(id, *w->second);
  fleet_.remove(id);
  audit(by, "agent.retire", {{"agent_id", id}, {"name", a->name}, {"requeued_run", requeued_run}});
  request_plan();
  auto out = store_.get_agent(id);
  if (!out) return make_error(Errc::not_found, "no agent " + std::to_string(id));
  return *out;
}

Result<NewToken> ControlPlane::create_token(const std::string& user, Scope scope,
                                            const std::string& note, const std::string& by) {
  if (user.empty() || user.size() > 64)
    return make_error(Errc::invalid_argument, "a token needs a user name of 1 to 64 characters");
  for (char c : user)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == '@'))
      return make_error(Errc::invalid_argument,
                        "user names may hold letters, digits and - _ . @ only");
  NewToken out;
  out.secret = random_secret("kft_");
  out.record.user = user;
  out.record.scope = to_string(scope);
  out.record.token_hash = sha256_hex(out.secret);
  out.record.prefix = out.secret.substr(0, 8);
  out.record.note = note.substr(0, 200);
  out.record.created_by = by;
  auto r = store_.create_token(out.record, clock_->now_ms());
  if (!r) return r.error();
  out.record = *r;
  audit(by, "token.create", {{"token_id", r->id}, {"user", r->user}, {"scope", r->scope}});
  return out;
}

Result<store::ApiToken> ControlPlane::revoke_token(std::int64_t id, const std::string& by) {
  auto r = store_.revoke_token(id, clock_->now_ms());
  if (!r) return r.error();
  {
    std::lock_guard lk(shared_mu_);
    user_cache_.erase(r->token_hash);
  }
  audit(by, "token.revoke", {{"token_id", r->id}, {"user", r->user}, {"scope", r->scope}});
  return r;
}

void ControlPlane::audit(const std::string& user, const std::string& action,
                         const nlohmann::json& data) {
  if (auto r = store_.append_audit(user, action, data, clock_->now_ms()); !r)
    log::error("audit", "cannot record ", action, " by ", user, ": ", r.error().message);
}

}  // namespace kfleet::core
