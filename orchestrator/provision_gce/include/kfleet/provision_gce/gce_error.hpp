#pragma once
// Turns Compute Engine's answers into the provisioner's outcome: the HTTP status and JSON error
// body of a failed call, or the error.errors[] of an operation that finished with an error.
// Pure, so it is tested on Compute Engine's own error bodies.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kfleet/provision/provisioner.hpp"

namespace kfleet::provision {

struct GceFailure {
  Outcome outcome = Outcome::fatal;
  std::string code;          // "ZONE_RESOURCE_POOL_EXHAUSTED", "rateLimitExceeded", "http 403", ...
  std::string message;       // Compute Engine's own words, shortened for an event
  bool region_wide = false;  // the failure holds for the zone's whole region (quota)
};

// A failed HTTP call: {"error": {"code", "message", "errors": [{"reason", "message"}]}}.
// Reasons decide before the status: 403 rateLimitExceeded is transient, 403 quotaExceeded is
// quota; any other 401/403 is fatal; 429 and 5xx are transient; 400/404 naming a machine type or
// accelerator type is unsupported; anything else is fatal.
GceFailure classify_gce_http(long status, std::string_view body);

// An operation with status DONE and an "error" member. Its codes decide; httpErrorStatusCode
// (503 on a stockout, 403 on a quota) only breaks ties for codes this table does not know.
GceFailure classify_gce_operation(const nlohmann::json& operation);

// j[key] when j is an object holding a string (an integer) there, else `fallback`. Compute
// Engine's answers come from outside: nlohmann's value() throws on a member of another type (or
// on a document that is not an object), and such a throw would end kfleetd.
std::string json_string_at(const nlohmann::json& j, const char* key, const std::string& fallback = "");
long json_long_at(const nlohmann::json& j, const char* key, long fallback = 0);

// "us-central1" for "us-central1-a"; a name without a zone suffix comes back unchanged.
std::string gce_region_of_zone(const std::string& zone);

}  // namespace kfleet::provision
