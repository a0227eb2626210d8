#pragma once
// JSON to and from a TEXT column, for both backends (sqlite_db.hpp and pg_db.hpp include it).
#include <string>

#include <nlohmann/json.hpp>

namespace kfleet::store {

// JSON to TEXT without throwing on invalid UTF-8 (agent log lines may carry any bytes).
inline std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// "" or unparsable -> null.
inline nlohmann::json parse_json(const std::string& s) {
  if (s.empty()) return nullptr;
  auto j = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return nullptr;
  return j;
}

}  // namespace kfleet::store
