#pragma once
// Tolerant readers for the API's JSON: a missing or mistyped field reads as absent, because the
// CLI must keep printing what it can when a newer server adds or reshapes fields.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kfleet::cli {

inline std::optional<double> num_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

inline std::optional<std::int64_t> int_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->is_number_integer() ? it->get<std::int64_t>()
                                 : static_cast<std::int64_t>(it->get<double>());
}

inline std::string str_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
  return "";
}

inline bool bool_field(const nlohmann::json& j, const char* key, bool fallback = false) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

inline const nlohmann::json& obj_field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

inline const nlohmann::json& arr_field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

// printf-style "%.<digits>f" without iostream state juggling.
inline std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Shortest readable form of a metric value: 0.0459, 1.2e-05, 96.
inline std::string compact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace kfleet::cli
