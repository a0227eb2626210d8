#include "fake_gce.hpp"

#include <regex>

#include <boost/beast/http.hpp>

namespace kfleet::provision::testing {
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

struct Reply {
  unsigned status = 200;
  json body;
};

std::string b64url_decode(const std::string& in) {
  std::string out;
  int val = 0, bits = -8;
  for (char c : in) {
    int d;
    if (c >= 'A' && c <= 'Z') d = c - 'A';
    else if (c >= 'a' && c <= 'z') d = c - 'a' + 26;
    else if (c >= '0' && c <= '9') d = c - '0' + 52;
    else if (c == '-') d = 62;
    else if (c == '_') d = 63;
    else break;
    val = (val << 6) + d;
    bits += 6;
    if (bits >= 0) {
      out += static_cast<char>((val >> bits) & 0xFF);
      bits -= 8;
    }
  }
  return out;
}

std::string region_of(const std::string& zone) { return zone.substr(0, zone.rfind('-')); }

json api_error(unsigned code, const std::string& message, const std::string& reason, const std::string& status) {
  return {{"error",
           {{"code", code},
            {"message", message},
            {"errors", {{{"message", message}, {"domain", "global"}, {"reason", reason}}}},
            {"status", status}}}};
}

}  // namespace

struct FakeGce::State {
  std::string base_url;  // "http://127.0.0.1:<port>", set once the server listens (under mutex)
  mutable std::mutex mutex;
  std::map<std::string, ZoneBehaviour> behaviour;
  std::map<std::string, bool> throttled;  // zone -> the one 429 was answered
  bool refuse = false;
  int lifetime_s = 3600;
  int polls_to_done = 2;
  std::vector<FakeGceRequest> requests;
  std::map<std::string, FakeGceInstance> instances;
  std::map<std::string, int> insert_calls;
  std::vector<std::string> deleted;
  std::vector<std::string> issues;
  std::vector<std::string> tokens;
  struct Op {
    json doc;
    int polls = 0;
    json error;  // null: success
    long http_error = 0;
  };
  std::map<std::string, Op> ops;
  int next_op = 1;

  const std::string& base() const { return base_url; }

  json op_json(Op& op) {
    json d = op.doc;
    if (op.polls <= 0) d["status"] = "PENDING";
    else if (op.polls < polls_to_done) d["status"] = "RUNNING";
    else {
      d["status"] = "DONE";
      d["progress"] = 100;
      if (!op.error.is_null()) {
        d["error"] = op.error;
        d["httpErrorStatusCode"] = op.http_error;
        d["httpErrorMessage"] = op.http_error == 503 ? "SERVICE UNAVAILABLE" : "FORBIDDEN";
      }
    }
    return d;
  }

  Reply new_op(const std::string& project, const std::string& zone, const std::string& type, const std::string& target,
               json error = nullptr, long http_error = 0) {
    const std::string name = "operation-17000000000" + std::to_string(next_op++) + "-5f0c3e2a1b9d4";
    Op op;
    op.doc = {{"kind", "compute#operation"},
              {"id", std::to_string(4000000000000000000LL + next_op)},
              {"name", name},
              {"zone", base() + "/compute/v1/projects/" + project + "/zones/" + zone},
              {"operationType", type},
              {"targetLink", base() + "/compute/v1/projects/" + project + "/zones/" + zone + "/instances/" + target},
              {"status", "PENDING"},
              {"progress", 0},
              {"selfLink", base() + "/compute/v1/projects/" + project + "/zones/" + zone + "/operations/" + name}};
    op.error = std::move(error);
    op.http_error = http_error;
    auto& stored = ops[name] = op;
    return {200, op_json(stored)};
  }

  bool bearer_ok(const FakeGceRequest& r) {
    for (const auto& t : tokens)
      if (r.authorization == "Bearer " + t) return true;
    return false;
  }

  Reply token(const FakeGceRequest& r) {
    if (r.method == "GET") {  // metadata server
      if (r.metadata_flavor != "Google") {
        issues.push_back("metadata token request without Metadata-Flavor: Google");
        return {403, {{"error", "Missing Metadata-Flavor:Google header"}}};
      }
    } else {
      std::map<std::string, std::string> form;
      for (auto& [k, v] : parse_form(r.body)) form.emplace(k, v);
      if (form["grant_type"] != "urn:ietf:params:oauth:grant-type:jwt-bearer")
        issues.push_back("token request with grant_type '" + form["grant_type"] + "'");
      if (r.content_type.find("application/x-www-form-urlencoded") == std::string::npos)
        issues.push_back("token request with content type '" + r.content_type + "'");
      std::string jwt = form["assertion"];
      auto dot1 = jwt.find('.'), dot2 = jwt.find('.', dot1 + 1);
      json claims = dot1 == std::string::npos || dot2 == std::string::npos
                        ? json()
                        : json::parse(b64url_decode(jwt.substr(dot1 + 1, dot2 - dot1 - 1)), nullptr, false);
      json header = dot1 == std::string::npos ? json() : json::parse(b64url_decode(jwt.substr(0, dot1)), nullptr, false);
      if (!header.is_object() || header.value("alg", "") != "RS256") issues.push_back("JWT header is not RS256");
      if (!claims.is_object() || claims.value("scope", "").find("auth/compute") == std::string::npos ||
          claims.value("iss", "").empty() || claims.value("exp", 0) <= claims.value("iat", 0))
        issues.push_back("JWT claims without iss, the compute scope or a later exp: " + claims.dump());
      if (refuse) return {400, {{"error", "invalid_grant"}, {"error_description", "Invalid JWT Signature."}}};
    }
    const std::string t = "ya29.fake-" + std::to_string(tokens.size() + 1);
    tokens.push_back(t);
    return {200, {{"access_token", t}, {"expires_in", lifetime_s}, {"token_type", "Bearer"}}};
  }

  Reply handle(const FakeGceRequest& r) {
    std::lock_guard lock(mutex);
    requests.push_back(r);
    if (r.path == "/token" || r.path == "/computeMetadata/v1/instance/service-accounts/default/token") return token(r);
    static const std::regex re(R"(^/compute/v1/projects/([^/]+)/zones/([^/]+)/(instances|operations)(?:/([^/]+))?$)");
    std::smatch m;
    if (!std::regex_match(r.path, m, re)) {
      issues.push_back("unknown path " + r.method + " " + r.path);
      return {404, api_error(404, "The requested URL was not found.", "notFound", "NOT_FOUND")};
    }
    if (!bearer_ok(r)) {
      issues.push_back("bad bearer '" + r.authorization + "' on " + r.path);
      return {401, api_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token.",
                             "authError", "UNAUTHENTICATED")};
    }
    const std::string project = m[1], zone = m[2], kind = m[3], name = m[4];
    if (kind == "operations" && r.method == "GET") {
      auto it = ops.find(name);
      if (it == ops.end()) return {404, api_error(404, "The resource '" + name + "' was not found", "notFound", "NOT_FOUND")};
      ++it->second.polls;
      return {200, op_json(it->second)};
    }
    if (kind == "instances" && r.method == "POST" && name.empty()) return insert(r, project, zone);
    if (kind == "instances" && r.method == "DELETE" && !name.empty()) {
      deleted.push_back(name);
      auto it = instances.find(name);
      if (it == instances.end() || it->second.status == "DELETED")
        return {404, api_error(404, "The resource 'projects/" + project + "/zones/" + zone + "/instances/" + name +
                                        "' was not found", "notFound", "NOT_FOUND")};
      it->second.status = "DELETED";
      return new_op(project, zone, "delete", name);
    }
    issues.push_back("unhandled " + r.method + " " + r.path);
    return {400, api_error(400, "unhandled by the fake", "invalid", "INVALID_ARGUMENT")};
  }

  Reply insert(const FakeGceRequest& r, const std::string& project, const std::string& zone) {
    ++insert_calls[zone];
    if (r.query.find("requestId=") == std::string::npos) issues.push_back("insert without requestId");
    json body = json::parse(r.body, nullptr, false);
    if (body.is_discarded()) {
      issues.push_back("insert body is not JSON");
      return {400, api_error(400, "Invalid JSON payload received.", "parseError", "INVALID_ARGUMENT")};
    }
    const std::string name = body.value("name", "");
    const auto b = behaviour.count(zone) ? behaviour[zone] : ZoneBehaviour::capacity;
    const std::string mt = body.value("machineType", "");
    switch (b) {
      case ZoneBehaviour::unsupported:
        return {400, api_error(400,
                               "Invalid value for field 'resource.machineType': '" + mt + "'. Machine type with name '" +
                                   mt.substr(mt.rfind('/') + 1) + "' does not exist in zone '" + zone + "'.",
                               "invalid", "INVALID_ARGUMENT")};
      case ZoneBehaviour::forbidden:
        return {403, api_error(403, "Required 'compute.instances.create' permission for 'projects/" + project +
                                        "/zones/" + zone + "/instances/" + name + "'",
                               "forbidden", "PERMISSION_DENIED")};
      case ZoneBehaviour::throttled_once:
        if (!throttled[zone]) {
          throttled[zone] = true;
          return {429, api_error(429, "Rate Limit Exceeded", "rateLimitExceeded", "RESOURCE_EXHAUSTED")};
        }
        break;
      case ZoneBehaviour::stockout:
      case ZoneBehaviour::stockout_details:
        return new_op(project, zone, "insert", name,
                      json{{"errors",
                            {{{"code", b == ZoneBehaviour::stockout ? "ZONE_RESOURCE_POOL_EXHAUSTED"
                                                                    : "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"},
                              {"message", "The zone 'projects/" + project + "/zones/" + zone +
                                              "' does not have enough resources available to fulfill the request.  "
                                              "Try a different zone, or try again later."}}}}},
                      503);
      case ZoneBehaviour::quota:
        return new_op(project, zone, "insert", name,
                      json{{"errors",
                            {{{"code", "QUOTA_EXCEEDED"},
                              {"message", "Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 0.0 in region " + region_of(zone) + "."},
                              {"errorDetails",
                               {{{"quotaInfo", {{"metricName", "compute.googleapis.com/nvidia_l4_gpus"},
                                                {"limitName", "NVIDIA-L4-GPUS-per-project-region"},
                                                {"dimensions", {{"region", region_of(zone)}}},
                                                {"limit", 0}}}}}}}}}},
                      403);
      case ZoneBehaviour::capacity:
        break;
    }
    instances[name] = FakeGceInstance{name, zone, "RUNNING", body};
    return new_op(project, zone, "insert", name);
  }
};

FakeGce::FakeGce()
    : state_(std::make_shared<State>()),
      server_(std::make_unique<LoopbackHttpServer>([s = state_.get()](const LoopbackHttpServer::Request& req) {
        FakeGceRequest r;
        r.method = std::string(req.method_string());
        std::string target(req.target());
        auto q = target.find('?');
        r.path = target.substr(0, q);
        r.query = q == std::string::npos ? "" : target.substr(q + 1);
        r.authorization = std::string(req[http::field::authorization]);
        r.metadata_flavor = std::string(req["Metadata-Flavor"]);
        r.content_type = std::string(req[http::field::content_type]);
        r.body = req.body();
        Reply reply = s->handle(r);
        LoopbackHttpServer::Response res{static_cast<http::status>(reply.status), req.version()};
        res.set(http::field::content_type, "application/json; charset=UTF-8");
        res.body() = reply.body.dump();
        return res;
      })) {
  std::lock_guard lock(state_->mutex);  // handle() reads it under the same lock
  state_->base_url = server_->base_url();
}

FakeGce::~FakeGce() = default;

std::string FakeGce::endpoint() const { return state_->base() + "/compute/v1"; }
std::string FakeGce::token_url() const { return state_->base() + "/token"; }
std::string FakeGce::metadata_token_url() const {
  return state_->base() + "/computeMetadata/v1/instance/service-accounts/default/token";
}
void FakeGce::set_behaviour(const std::string& zone, ZoneBehaviour b) {
  std::lock_guard lock(state_->mutex);
  state_->behaviour[zone] = b;
}
void FakeGce::refuse_tokens(bool refuse) {
  std::lock_guard lock(state_->mutex);
  state_->refuse = refuse;
}
void FakeGce::set_token_lifetime_s(int s) {
  std::lock_guard lock(state_->mutex);
  state_->lifetime_s = s;
}
void FakeGce::set_polls_to_done(int n) {
  std::lock_guard lock(state_->mutex);
  state_->polls_to_done = n;
}
std::vector<FakeGceRequest> FakeGce::requests() const {
  std::lock_guard lock(state_->mutex);
  return state_->requests;
}
std::vector<FakeGceInstance> FakeGce::instances() const {
  std::lock_guard lock(state_->mutex);
  std::vector<FakeGceInstance> out;
  for (const auto& [n, i] : state_->instances) out.push_back(i);
  return out;
}
int FakeGce::inserts(const std::string& zone) const {
  std::lock_guard lock(state_->mutex);
  auto it = state_->insert_calls.find(zone);
  return it == state_->insert_calls.end() ? 0 : it->second;
}
std::vector<std::string> FakeGce::deletes() const {
  std::lock_guard lock(state_->mutex);
  return state_->deleted;
}
int FakeGce::tokens_issued() const {
  std::lock_guard lock(state_->mutex);
  return static_cast<int>(state_->tokens.size());
}
std::vector<std::string> FakeGce::problems() const {
  std::lock_guard lock(state_->mutex);
  return state_->issues;
}

}  // namespace kfleet::provision::testing
