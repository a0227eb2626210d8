#include "kfleet/common/event.hpp"

namespace kfleet {

nlohmann::json to_json(const Event& e) {
  return {{"id", e.id},       {"job_id", e.job_id}, {"run_id", e.run_id},
          {"seq", e.seq},     {"ts_ms", e.ts_ms},   {"ts", format_iso8601(e.ts_ms)},
          {"type", e.type},
          {"data", e.data_text.empty() ? e.data
                                       : nlohmann::json::parse(e.data_text, nullptr, false)}};
}

Event event_from_json(const nlohmann::json& j) {
  Event e;
  if (!j.is_object()) return e;
  auto i64 = [&](const char* k) {
    return j.contains(k) && j[k].is_number_integer() ? j[k].get<std::int64_t>() : 0;
  };
  e.id = i64("id");
  e.job_id = i64("job_id");
  e.run_id = i64("run_id");
  e.seq = i64("seq");
  e.ts_ms = i64("ts_ms");
  e.type = j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
  if (j.contains("data") && j["data"].is_object()) e.data = j["data"];
  return e;
}

}  // namespace kfleet
