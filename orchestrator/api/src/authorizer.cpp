// The access rules of kfleetd's API (authorizer.hpp), with the answers that say what to fix.
#include "authorizer.hpp"

#include "kfleet/common/sha256.hpp"

namespace kfleet::api {
namespace {

Response too_many(const Request& req, int retry_after_s, const std::string& what) {
  Response res = error_response(req, http::status::too_many_requests, "rate_limited",
                                what + "; retry in " + std::to_string(retry_after_s) + " s");
  res.set(http::field::retry_after, std::to_string(retry_after_s));
  return res;
}

Response unauthorized(const Request& req, const std::string& message) {
  Response res = error_response(req, http::status::unauthorized, "unauthorized", message);
  res.set(http::field::www_authenticate, "Bearer realm=\"kfleetd\"");
  return res;
}

Response forbidden(const Request& req, const std::string& message) {
  return error_response(req, http::status::forbidden, "forbidden", message);
}

core::Scope needed_scope(Access a) {
  switch (a) {
    case Access::submit: return core::Scope::submit;
    case Access::admin: return core::Scope::admin;
    default: return core::Scope::read;
  }
}

}  // namespace

std::optional<Response> Authorizer::check(core::ControlPlane& cp, const Route& r, Ctx& c,
                                          const std::string& peer, bool client_cert_ok,
                                          bool on_reader) {
  const Request& req = c.req;
  auto failed = [&](Response res) {  // a token was shown and it was wrong
    if (!c.bearer.empty()) auth_fail_limit_.take("ip:" + peer);
    return res;
  };
  if (r.access == Access::open) return std::nullopt;
  if (r.access == Access::metrics && rules_.metrics_open) return std::nullopt;
  if (int wait = auth_fail_limit_.retry_after("ip:" + peer); wait > 0)
    return too_many(req, wait, "too many failed authentications from " + peer);

  const bool agent_route = r.access == Access::agent || r.access == Access::agent_run ||
                           r.access == Access::enrol;
  if (agent_route) {
    if (rules_.agents_need_client_cert && !client_cert_ok)
      return forbidden(req, "agent calls need a client certificate signed by kfleetd's "
                            "--tls-client-ca (kfleet-agent --tls-cert/--tls-key)");
    if (c.bearer.empty())
      return failed(unauthorized(req, r.access == Access::enrol
                                          ? "enrolment needs an enrolment token, the fleet's or "
                                            "one an admin minted (kfleet-agent "
                                            "--enrol-token-file or KFLEET_ENROL_TOKEN)"
                                          : "agent calls need the agent token that enrol returned"));
    if (r.access == Access::enrol) {
      if (cp.is_enrol_token(c.bearer)) return std::nullopt;
      if (cp.agent_for_token(c.bearer) || cp.is_user_token(c.bearer))
        return forbidden(req, "enrolment needs the enrolment token, not a user or agent token");
      return failed(unauthorized(req, "kfleetd does not know this enrolment token"));
    }
    const std::int64_t aid = cp.agent_for_token(c.bearer);
    if (aid == 0) {
      if (cp.is_user_token(c.bearer) || cp.is_enrol_token(c.bearer))
        return forbidden(req, "this call is for agents; a user or enrolment token cannot make it");
      return failed(unauthorized(req, "kfleetd does not know this agent token"));
    }
    if (r.access == Access::agent && aid != c.id())
      return forbidden(req, "this token is not the agent's own (it belongs to agent " +
                                std::to_string(aid) + ")");
    c.agent_id = aid;
    return std::nullopt;
  }

  const core::Scope need = needed_scope(r.access);
  if (c.bearer.empty())
    return failed(unauthorized(
        req, std::string("this call needs an API token of scope ") + core::to_string(need) +
                 " in the Authorization header (kfleet: KFLEET_TOKEN or --token-file; "
                 "dashboards: sign in)"));
  auto p = on_reader ? cp.cached_user(c.bearer) : cp.user_for_token(c.bearer);
  if (!p && on_reader)  // revoked since the connection came here
    return failed(unauthorized(req, "kfleetd does not know this API token (revoked, or never "
                                    "made: an admin makes one with `kfleet token create`)"));
  if (!p) {
    if (const std::int64_t aid = cp.agent_for_token(c.bearer)) {
      if (r.access == Access::bundle) {
        c.agent_id = aid;
        auto a = cp.store().get_agent(aid);
        auto run = a && a->current_run_id ? cp.store().get_run(a->current_run_id) : std::nullopt;
        auto job = run ? cp.store().get_job(run->job_id) : std::nullopt;
        auto it = c.params.find("hash");
        if (job && it != c.params.end() && job->bundle_hash == it->second) return std::nullopt;
        return forbidden(req, "an agent may read only the bundle of the job it holds");
      }
      return forbidden(req, "an agent token cannot make user calls");
    }
    if (cp.is_enrol_token(c.bearer))
      return forbidden(req, "the enrolment token cannot make user calls");
    return failed(unauthorized(req, "kfleetd does not know this API token (revoked, or never "
                                    "made: an admin makes one with `kfleet token create`)"));
  }
  if (static_cast<int>(p->scope) < static_cast<int>(need))
    return forbidden(req, std::string("this call needs scope ") + core::to_string(need) +
                              "; the token of " + p->user + " has scope " +
                              core::to_string(p->scope));
  c.user = std::move(p);
  if (r.access == Access::submit) {
    const std::string key = "submit:" + sha256_hex(c.bearer);
    if (int wait = submit_limit_.retry_after(key); wait > 0)
      return too_many(req, wait, "too many submissions for this token");
    submit_limit_.take(key);
  }
  return std::nullopt;
}

}  // namespace kfleet::api
