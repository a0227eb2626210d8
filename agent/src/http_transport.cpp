// Transport over kfleetd's HTTP API. HttpClient keeps one connection and is not thread-safe,
// so each calling thread (main loop, heartbeat, uploader) gets its own client.
#include <map>
#include <mutex>
#include <thread>

#include "kfleet/agent/transport.hpp"
#include "kfleet/common/http_client.hpp"

namespace kfleet::agent {

namespace {

Error status_error(const std::string& what, const HttpResponse& r) {
  Errc code = Errc::internal;
  switch (r.status) {
    case 400: code = Errc::invalid_argument; break;
    case 401: code = Errc::unauthorized; break;
    case 403: code = Errc::forbidden; break;
    case 404: code = Errc::not_found; break;
    case 409: code = Errc::conflict; break;
    case 413: code = Errc::too_large; break;
    // Too busy or timed out on kfleetd's side: the fleet's, retried like a 5xx.
    case 408: code = Errc::unavailable; break;
    case 429: code = Errc::unavailable; break;
    default: code = r.status >= 500 ? Errc::unavailable : Errc::internal;
  }
  return make_error(code, what + ": " + r.error_message());
}

// A 2xx whose body is not the JSON it should be was cut short or garbled on the way (a proxy,
// a kfleetd killed mid-answer): the fleet's, retried.
template <class T>
Result<T> garbled(const std::string& what, const Error& e) {
  return make_error(Errc::unavailable, what + ": answer cut short or garbled: " + e.message);
}

class HttpTransport final : public Transport {
 public:
  HttpTransport(std::string url, std::string enrol_token, HttpOptions http, TransportTimeouts t)
      : url_(std::move(url)), enrol_token_(enrol_token), token_(std::move(enrol_token)),
        http_(std::move(http)), t_(t) {}

  Result<Enrolment> enrol(const nlohmann::json& body) override {
    // Always with the enrolment token, also when enrolling again after kfleetd refused the
    // agent's own token (a fresh database, a revoked agent): that token is no enrolment token.
    HttpClient enrol_client(url_, enrol_token_, http_);
    auto r = enrol_client.post_json("/api/v1/agents/enrol", body, t_.call);
    if (!r) return r.error();
    if (r->status != 201 && r->status != 200) {
      auto e = status_error("enrol", *r);
      if (r->status == 401) e.message += " (check --enrol-token-file / KFLEET_ENROL_TOKEN)";
      return e;
    }
    auto j = r->json();
    if (!j) return garbled<Enrolment>("enrol", j.error());
    Enrolment en;
    en.agent_id = j->value("agent_id", std::int64_t{0});
    en.token = j->value("token", std::string());
    en.heartbeat_ms = j->value("heartbeat_ms", 5000);
    en.lease_ttl_ms = j->value("lease_ttl_ms", 30000);
    if (en.agent_id <= 0 || en.token.empty())
      return make_error(Errc::internal, "enrol: kfleetd answered without agent_id or token");
    return en;
  }

  void set_agent_token(const std::string& token) override {
    std::lock_guard<std::mutex> l(mu_);
    token_ = token;
    for (auto& [_, c] : clients_) c->set_token(token);
  }

  Result<std::optional<Lease>> lease(std::int64_t agent_id, int wait_ms) override {
    auto path = "/api/v1/agents/" + std::to_string(agent_id) +
                "/lease?wait_ms=" + std::to_string(wait_ms);
    // The server holds the request up to wait_ms: allow for that plus slack.
    auto r = client().request("POST", path, "{}", "application/json",
                              std::chrono::milliseconds(wait_ms) + t_.lease_slack);
    if (!r) return r.error();
    if (r->status == 204) return std::optional<Lease>{};
    if (r->status != 200) return status_error("lease", *r);
    auto j = r->json();
    if (!j) return garbled<std::optional<Lease>>("lease", j.error());
    if (!j->contains("lease")) return make_error(Errc::unavailable, "lease: no `lease` in answer");
    auto l = lease_from_json((*j)["lease"]);
    if (!l) return l.error();
    return std::optional<Lease>(std::move(*l));
  }

  Result<HeartbeatReply> heartbeat(std::int64_t agent_id, std::int64_t run_id,
                                   std::int64_t fencing_token) override {
    nlohmann::json body = nlohmann::json::object();
    if (run_id > 0) body = {{"run_id", run_id}, {"fencing_token", fencing_token}};
    auto r = client().post_json("/api/v1/agents/" + std::to_string(agent_id) + "/heartbeat",
                                body, t_.heartbeat);
    if (!r) return r.error();
    if (r->status != 200) return status_error("heartbeat", *r);
    auto j = r->json();
    if (!j) return garbled<HeartbeatReply>("heartbeat", j.error());
    return HeartbeatReply{j->value("lease_valid", true), j->value("cancel", false)};
  }

  Result<UploadAck> upload_events(std::int64_t run_id, std::int64_t fencing_token,
                                  const std::vector<Event>& events) override {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : events) arr.push_back(to_json(e));
    auto r = client().post_json("/api/v1/runs/" + std::to_string(run_id) + "/events",
                                {{"fencing_token", fencing_token}, {"events", std::move(arr)}},
                                t_.call);
    if (!r) return r.error();
    if (r->status != 200) return status_error("upload events of run " + std::to_string(run_id), *r);
    auto j = r->json();
    if (!j) return garbled<UploadAck>("upload events of run " + std::to_string(run_id), j.error());
    return UploadAck{j->value("contiguous", std::int64_t{0})};
  }

  Result<void> finish(std::int64_t run_id, std::int64_t fencing_token, const Verdict& v) override {
    auto r = client().post_json("/api/v1/runs/" + std::to_string(run_id) + "/finish",
                                {{"fencing_token", fencing_token}, {"verdict", to_json(v)}},
                                t_.call);
    if (!r) return r.error();
    if (r->status != 200) return status_error("finish run " + std::to_string(run_id), *r);
    return ok_result();
  }

  Result<Bundle> fetch_bundle(const std::string& hash) override {
    auto r = client().get("/api/v1/bundles/" + hash, t_.fetch);
    if (!r) return r.error();
    if (r->status != 200) return status_error("fetch bundle " + hash, *r);
    auto j = r->json();
    if (!j) return garbled<Bundle>("fetch bundle " + hash, j.error());
    // kfleetd checked the bundle when the job was submitted: one that does not decode or hash
    // right now was damaged since, and another fetch may get it whole.
    auto b = bundle_from_json(*j);
    if (!b) return garbled<Bundle>("fetch bundle " + hash, b.error());
    if (b->hash() != hash)
      return make_error(Errc::unavailable, "bundle " + hash + " arrived with content hashing to " +
                                               b->hash() + ": refusing it");
    return b;
  }

 private:
  HttpClient& client() {
    std::lock_guard<std::mutex> l(mu_);
    auto& c = clients_[std::this_thread::get_id()];
    if (!c) c = std::make_unique<HttpClient>(url_, token_, http_);
    return *c;
  }

  std::string url_;
  const std::string enrol_token_;
  std::string token_;
  HttpOptions http_;
  TransportTimeouts t_;
  std::mutex mu_;
  std::map<std::thread::id, std::unique_ptr<HttpClient>> clients_;
};

}  // namespace

Result<Lease> lease_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(Errc::invalid_argument, "lease is not an object");
  Lease l;
  l.run_id = j.value("run_id", std::int64_t{0});
  l.job_id = j.value("job_id", std::int64_t{0});
  l.fencing_token = j.value("fencing_token", std::int64_t{0});
  l.ttl_ms = j.value("ttl_ms", 30000);
  l.attempt = j.value("attempt", 1);
  l.bundle_hash = j.value("bundle_hash", std::string());
  if (j.contains("phase") && j["phase"].is_string()) l.phase = j["phase"].get<std::string>();
  if (j.contains("arch") && j["arch"].is_string()) l.arch = j["arch"].get<std::string>();
  if (l.run_id <= 0) return make_error(Errc::invalid_argument, "lease without a run_id");
  if (j.contains("spec")) {
    auto s = job_spec_from_json(j["spec"]);
    if (s) {
      l.spec = std::move(*s);
    } else {
      l.spec_error = s.error().message;
      while (!l.spec_error.empty() && l.spec_error.back() == '\n') l.spec_error.pop_back();
    }
  }
  if (j.contains("compare") && j["compare"].is_object()) l.compare = Comparison::from_json(j["compare"]);
  return l;
}

Comparison Comparison::from_json(const nlohmann::json& j) {
  Comparison c;
  if (!j.is_object()) return c;
  auto str = [&](const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  c.kind = str("kind");
  c.label = str("label");
  c.note = str("note");
  if (j.contains("median_us") && j["median_us"].is_number()) c.median_us = j["median_us"].get<double>();
  if (j.contains("samples_us") && j["samples_us"].is_array())
    for (const auto& s : j["samples_us"])
      if (s.is_number()) c.samples_us.push_back(s.get<double>());
  if (j.contains("simulated") && j["simulated"].is_boolean()) c.simulated = j["simulated"].get<bool>();
  if (j.contains("interleave") && j["interleave"].is_boolean() && j["interleave"].get<bool>()) {
    c.interleave = true;
    c.bundle_hash = str("bundle_hash");
    auto spec = j.contains("spec") ? job_spec_from_json(j["spec"])
                                   : Result<JobSpec>(make_error(Errc::invalid_argument, "no spec"));
    if (spec.ok()) {
      c.spec = std::move(*spec);
    } else {
      c.interleave_error = "the reference's spec is missing or does not parse: " + spec.error().message;
    }
  }
  return c;
}

TransportPtr make_http_transport(const std::string& server_url, const std::string& enrol_token,
                                 HttpOptions http, TransportTimeouts timeouts) {
  return std::make_unique<HttpTransport>(server_url, enrol_token, std::move(http), timeouts);
}

}  // namespace kfleet::agent
