// Identity and tokens: who am I, the admin's token list, create (the secret is shown once),
// revoke, and the audit log.
#include "http.hpp"
#include "views.hpp"

namespace kfleet::api {

namespace {

using Awaitable = boost::asio::awaitable<std::optional<Response>>;

nlohmann::json token_json(const store::ApiToken& t) {
  nlohmann::json j = {{"id", t.id},
                      {"user", t.user},
                      {"scope", t.scope},
                      {"prefix", t.prefix},
                      {"note", t.note},
                      {"created_by", t.created_by},
                      {"created", format_iso8601(t.created_ms)},
                      {"revoked", t.revoked_ms != 0}};
  if (t.revoked_ms) j["revoked_at"] = format_iso8601(t.revoked_ms);
  return j;
}

nlohmann::json enrol_token_json(const store::EnrolToken& t, TimeMs now) {
  std::string state = "valid";
  if (t.revoked_ms) state = "revoked";
  else if (t.expires_ms && t.expires_ms <= now) state = "expired";
  else if (t.max_uses && t.uses >= t.max_uses) state = "used_up";
  nlohmann::json j = {{"id", t.id},
                      {"name", t.name},
                      {"prefix", t.prefix},
                      {"instance_id", t.instance_id},
                      {"uses", t.max_uses},
                      {"used", t.uses},
                      {"created_by", t.created_by},
                      {"created", format_iso8601(t.created_ms)},
                      {"expires", t.expires_ms ? nlohmann::json(format_iso8601(t.expires_ms))
                                               : nlohmann::json(nullptr)},
                      {"state", state}};
  if (t.revoked_ms) j["revoked_at"] = format_iso8601(t.revoked_ms);
  return j;
}

}  // namespace

Awaitable list_enrol_tokens(Ctx& c) {
  const int limit = static_cast<int>(std::clamp<std::int64_t>(c.query_int("limit", 100), 1, 1000));
  const TimeMs now = c.cp.clock().now_ms();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : c.cp.store().list_enrol_tokens(limit)) out.push_back(enrol_token_json(t, now));
  co_return json_response(c.req, http::status::ok, {{"enrol_tokens", out}});
}

// An admin mints a limited enrolment token: {name, uses?, expires_in_s?, instance_id?}.
Awaitable mint_enrol_token(Ctx& c) {
  auto j = nlohmann::json::parse(c.req.body(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    co_return error_response(c.req, http::status::bad_request, "invalid_request",
                             "the request body must be a JSON object {name, uses?, expires_in_s?, "
                             "instance_id?}");
  core::EnrolTokenRequest r;
  if (!j.contains("name") || !j["name"].is_string())
    co_return error_response(c.req, http::status::bad_request, "invalid_request",
                             "name (what the enrolment token is for) is required");
  r.name = j["name"];
  if (j.contains("uses")) {
    if (!j["uses"].is_number_integer() || j["uses"].get<std::int64_t>() < 0 ||
        j["uses"].get<std::int64_t>() > 1'000'000)
      co_return error_response(c.req, http::status::bad_request, "invalid_request",
                               "uses must be a whole number from 0 (any number) to 1000000");
    r.uses = j["uses"].get<int>();
  }
  if (j.contains("expires_in_s")) {
    if (!j["expires_in_s"].is_number_integer() || j["expires_in_s"].get<std::int64_t>() < 0 ||
        j["expires_in_s"].get<std::int64_t>() > 10LL * 365 * 86400)
      co_return error_response(c.req, http::status::bad_request, "invalid_request",
                               "expires_in_s must be whole seconds from 0 (never) to ten years");
    r.expires_in_ms = j["expires_in_s"].get<std::int64_t>() * 1000;
  }
  if (j.contains("instance_id") && !j["instance_id"].is_null()) {
    if (!j["instance_id"].is_string())
      co_return error_response(c.req, http::status::bad_request, "invalid_request",
                               "instance_id must be a string (the cloud's id of the instance)");
    r.instance_id = j["instance_id"];
  }
  auto t = c.cp.mint_enrol_token(r, c.user_name());
  if (!t) co_return error_response(c.req, t.error());
  nlohmann::json out = enrol_token_json(t->record, c.cp.clock().now_ms());
  out["token"] = t->secret;  // shown once; kfleetd keeps only its hash
  co_return json_response(c.req, http::status::created, {{"enrol_token", out}});
}

Awaitable revoke_enrol_token(Ctx& c) {
  auto t = c.cp.revoke_enrol_token(c.id(), c.user_name());
  if (!t) co_return error_response(c.req, t.error());
  co_return json_response(c.req, http::status::ok,
                          {{"enrol_token", enrol_token_json(*t, c.cp.clock().now_ms())}});
}

Awaitable whoami(Ctx& c) {
  co_return json_response(c.req, http::status::ok,
                          {{"user", c.user_name()},
                           {"scope", c.user ? core::to_string(c.user->scope) : "read"},
                           {"token_id", c.user ? c.user->token_id : 0}});
}

Awaitable list_tokens(Ctx& c) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : c.cp.store().list_tokens()) out.push_back(token_json(t));
  co_return json_response(c.req, http::status::ok, {{"tokens", out}});
}

Awaitable create_token(Ctx& c) {
  auto j = nlohmann::json::parse(c.req.body(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    co_return error_response(c.req, http::status::bad_request, "invalid_request",
                             "the request body must be a JSON object {user, scope, note?}");
  if (!j.contains("user") || !j["user"].is_string())
    co_return error_response(c.req, http::status::bad_request, "invalid_request",
                             "user (who the token is for) is required");
  const std::string scope_s = j.value("scope", std::string("read"));
  auto scope = core::scope_from_string(scope_s);
  if (!scope)
    co_return error_response(c.req, http::status::bad_request, "invalid_request",
                             "scope must be read, submit or admin, not '" + scope_s + "'");
  auto t = c.cp.create_token(j["user"].get<std::string>(), *scope, j.value("note", std::string()),
                             c.user_name());
  if (!t) co_return error_response(c.req, t.error());
  nlohmann::json out = token_json(t->record);
  out["token"] = t->secret;  // shown once; kfleetd keeps only its hash
  co_return json_response(c.req, http::status::created, {{"token", out}});
}

Awaitable revoke_token(Ctx& c) {
  auto t = c.cp.revoke_token(c.id(), c.user_name());
  if (!t) co_return error_response(c.req, t.error());
  co_return json_response(c.req, http::status::ok, {{"token", token_json(*t)}});
}

// An admin takes an agent out of the fleet: it gets no more work and its token stops working
// (what to do with a stolen agent token).
Awaitable retire_agent(Ctx& c) {
  const auto before = c.cp.store().get_agent(c.id());
  const std::int64_t held = before && before->state != store::AgentState::retired
                                ? before->current_run_id
                                : 0;
  auto a = c.cp.retire_agent(c.id(), c.user_name());
  if (!a) co_return error_response(c.req, a.error());
  co_return json_response(c.req, http::status::ok,
                          {{"agent", agent_json(*a)}, {"requeued_run_id", held}});
}

Awaitable audit_log(Ctx& c) {
  const int limit = static_cast<int>(std::clamp<std::int64_t>(c.query_int("limit", 100), 1, 1000));
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : c.cp.store().audit_log(limit))
    out.push_back({{"id", a.id}, {"ts", format_iso8601(a.ts_ms)}, {"user", a.user},
                   {"action", a.action}, {"data", a.data}});
  co_return json_response(c.req, http::status::ok, {{"audit", out}});
}

}  // namespace kfleet::api
