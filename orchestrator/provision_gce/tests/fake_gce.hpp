#pragma once
// A fake Compute Engine API v1, OAuth2 token endpoint and metadata server on 127.0.0.1:<port 0>.
// It answers with Compute Engine's own JSON: operations that go PENDING -> RUNNING -> DONE over
// zoneOperations.get, operation errors (ZONE_RESOURCE_POOL_EXHAUSTED, QUOTA_EXCEEDED) and HTTP
// error bodies (400 machine type, 403 permission, 429 rate limit), zone by zone. It records
// every request so that tests can check its shape (machine type, scheduling, metadata, labels,
// bearer token), and refuses any bearer token it did not issue.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loopback_http.hpp"

namespace kfleet::provision::testing {

enum class ZoneBehaviour {
  capacity,          // the insert operation finishes without error
  stockout,          // DONE with ZONE_RESOURCE_POOL_EXHAUSTED (httpErrorStatusCode 503)
  stockout_details,  // DONE with ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS
  quota,             // DONE with QUOTA_EXCEEDED for NVIDIA_L4_GPUS in the zone's region
  unsupported,       // HTTP 400: the machine type does not exist in the zone
  forbidden,         // HTTP 403: no compute.instances.create permission
  throttled_once,    // HTTP 429 rateLimitExceeded once, then capacity
};

struct FakeGceRequest {
  std::string method;
  std::string path;   // without the query
  std::string query;
  std::string authorization;
  std::string metadata_flavor;
  std::string content_type;
  std::string body;
};

struct FakeGceInstance {
  std::string name;
  std::string zone;
  std::string status;  // RUNNING | DELETED
  nlohmann::json body;  // what instances.insert sent
};

class FakeGce {
 public:
  FakeGce();  // listening before it returns
  ~FakeGce();
  FakeGce(const FakeGce&) = delete;
  FakeGce& operator=(const FakeGce&) = delete;

  std::string endpoint() const;         // "http://127.0.0.1:<port>/compute/v1"
  std::string token_url() const;        // ".../token"
  std::string metadata_token_url() const;
  void set_behaviour(const std::string& zone, ZoneBehaviour b);
  void set_behaviours(const std::map<std::string, ZoneBehaviour>& by_zone) {
    for (const auto& [zone, b] : by_zone) set_behaviour(zone, b);
  }
  // The token endpoint answers 400 invalid_grant from now on.
  void refuse_tokens(bool refuse);
  // Tokens it issues expire after this many seconds (expires_in).
  void set_token_lifetime_s(int s);
  // GETs of an operation before it reports DONE (default 2: PENDING, RUNNING, then DONE).
  void set_polls_to_done(int n);

  std::vector<FakeGceRequest> requests() const;
  std::vector<FakeGceInstance> instances() const;
  int inserts(const std::string& zone) const;
  std::vector<std::string> deletes() const;  // instance names, in the order deletes came
  int tokens_issued() const;
  // Requests whose shape was wrong (unknown path, bad bearer, JWT without the compute scope).
  std::vector<std::string> problems() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::unique_ptr<LoopbackHttpServer> server_;  // after state_: stops before the state goes
};

}  // namespace kfleet::provision::testing
