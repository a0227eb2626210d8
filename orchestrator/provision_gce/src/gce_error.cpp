#include "kfleet/provision_gce/gce_error.hpp"

#include <algorithm>
#include <vector>

namespace kfleet::provision {
namespace {

struct Item {
  std::string code;     // operation error code or API error reason
  std::string message;
};

std::string shorten(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  constexpr std::size_t kMax = 400;  // events are short; the full body stays in the daemon's log
  if (s.size() > kMax) s = s.substr(0, kMax - 3) + "...";
  return s;
}

bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

bool is_stockout(const std::string& c) {
  return c == "ZONE_RESOURCE_POOL_EXHAUSTED" || c == "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS" ||
         c == "UNSUPPORTED_OPERATION" || c == "insufficientCapacity" || c == "RESOURCE_POOL_EXHAUSTED";
}
bool is_quota(const std::string& c) { return c == "QUOTA_EXCEEDED" || c == "quotaExceeded"; }
bool is_rate(const std::string& c) {
  return c == "rateLimitExceeded" || c == "userRateLimitExceeded" || c == "RATE_LIMIT_EXCEEDED" ||
         c == "RESOURCE_OPERATION_RATE_EXCEEDED" || c == "backendError" || c == "INTERNAL_ERROR" ||
         c == "internalError" || c == "SERVICE_UNAVAILABLE";
}
// A machine type, accelerator type or zone the request names does not exist there.
bool names_unoffered_resource(const std::string& message) {
  const bool what = contains(message, "machineTypes/") || contains(message, "acceleratorTypes/") ||
                    contains(message, "Machine type") || contains(message, "machine type") ||
                    contains(message, "Accelerator type") || contains(message, "accelerator type");
  const bool missing = contains(message, "not found") || contains(message, "does not exist") ||
                       contains(message, "not available") || contains(message, "not supported") ||
                       contains(message, "Invalid value for field");
  return what && missing;
}

GceFailure decide(const std::vector<Item>& items, long status, const std::string& fallback) {
  auto first = [&](auto pred) -> const Item* {
    for (const auto& i : items)
      if (pred(i)) return &i;
    return nullptr;
  };
  auto make = [&](Outcome o, const Item* i, bool region = false) {
    const std::string code = i ? i->code : "http " + std::to_string(status);
    std::string words = i && !i->message.empty() ? i->message : fallback;
    return GceFailure{o, code, shorten(code + ": " + words), region};
  };
  // Order matters when an answer carries several: the one that changes what to do wins.
  if (const Item* i = first([](const Item& x) { return is_stockout(x.code); })) return make(Outcome::stockout, i);
  if (const Item* i = first([](const Item& x) { return is_quota(x.code); })) return make(Outcome::quota, i, true);
  if (const Item* i = first([](const Item& x) { return is_rate(x.code); })) return make(Outcome::transient, i);
  if (const Item* i = first([](const Item& x) { return names_unoffered_resource(x.message); }))
    return make(Outcome::unsupported, i);
  if (status == 401 || status == 403) return make(Outcome::fatal, items.empty() ? nullptr : &items.front());
  if (status == 429 || (status >= 500 && status <= 599))
    return make(Outcome::transient, items.empty() ? nullptr : &items.front());
  if (names_unoffered_resource(fallback)) return make(Outcome::unsupported, nullptr);
  // Unknown: stop and let a person look, rather than buying GPUs in a loop.
  return make(Outcome::fatal, items.empty() ? nullptr : &items.front());
}

}  // namespace

GceFailure classify_gce_http(long status, std::string_view body) {
  auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  std::vector<Item> items;
  std::string top;
  if (!doc.is_discarded() && doc.is_object() && doc.contains("error")) {
    const auto& e = doc["error"];
    if (e.is_object()) {
      top = json_string_at(e, "message");
      if (e.contains("errors") && e["errors"].is_array()) {
        for (const auto& x : e["errors"])
          if (x.is_object()) items.push_back({json_string_at(x, "reason"), json_string_at(x, "message", top)});
      }
      if (items.empty()) items.push_back({json_string_at(e, "status"), top});
    } else if (e.is_string()) {
      // The OAuth2 token endpoint: {"error": "invalid_grant", "error_description": "..."}.
      items.push_back({e.get<std::string>(), json_string_at(doc, "error_description")});
    }
  }
  if (top.empty()) top = std::string(body.substr(0, 300));
  if (top.empty()) top = "HTTP " + std::to_string(status) + " with an empty body";
  return decide(items, status, top);
}

GceFailure classify_gce_operation(const nlohmann::json& op) {
  std::vector<Item> items;
  if (op.contains("error") && op["error"].is_object() && op["error"].contains("errors") &&
      op["error"]["errors"].is_array()) {
    for (const auto& x : op["error"]["errors"])
      if (x.is_object()) items.push_back({json_string_at(x, "code"), json_string_at(x, "message")});
  }
  const long status = json_long_at(op, "httpErrorStatusCode");
  std::string fallback = json_string_at(op, "httpErrorMessage");
  if (fallback.empty()) fallback = "operation " + json_string_at(op, "name", "?") + " failed";
  // An operation's httpErrorStatusCode is 403 for a quota and 503 for a stockout: the codes
  // above already decided those; for unknown codes it must not turn into "fatal auth".
  return decide(items, status == 401 || status == 403 ? 400 : status, fallback);
}

std::string json_string_at(const nlohmann::json& j, const char* key, const std::string& fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

long json_long_at(const nlohmann::json& j, const char* key, long fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<long>() : fallback;
}

std::string gce_region_of_zone(const std::string& zone) {
  const auto dash = zone.rfind('-');
  if (dash == std::string::npos || dash + 2 != zone.size()) return zone;
  const char c = zone.back();
  if (c < 'a' || c > 'z') return zone;
  return zone.substr(0, dash);
}

}  // namespace kfleet::provision
