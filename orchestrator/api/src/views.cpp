#include "views.hpp"

#include <string_view>

namespace kfleet::api {

namespace {
nlohmann::json time_or_null(TimeMs t) {
  return t > 0 ? nlohmann::json(format_iso8601(t)) : nlohmann::json(nullptr);
}

void put(std::string& out, const nlohmann::json& v) {
  out += v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
// A JSON string as json::dump writes it (error_handler replace, as json_response dumps): ASCII
// escaped here, anything else through the library.
void put(std::string& out, std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) {
      put(out, nlohmann::json(std::string(s)));
      return;
    }
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}
void put(std::string& out, std::int64_t v) { out += std::to_string(v); }
void put(std::string& out, bool v) { out += v ? "true" : "false"; }
void put_time(std::string& out, TimeMs t) {
  if (t > 0) put(out, std::string_view(format_iso8601(t)));
  else out += "null";
}
// `,"key":` (no comma before the first key of an object).
void key(std::string& out, const char* k, bool first = false) {
  if (!first) out += ',';
  out += '"';
  out += k;
  out += "\":";
}
}  // namespace

nlohmann::json job_json(const store::JobRecord& j, bool with_spec) {
  nlohmann::json o = {{"id", j.id},
                      {"name", j.name},
                      {"campaign", j.campaign},
                      {"parent", j.parent},
                      {"priority", j.priority},
                      {"gpu", j.gpu},
                      {"regions", j.regions},
                      {"state", to_string(j.state)},
                      {"state_reason", j.state_reason},
                      {"attempts", j.attempts},
                      {"max_attempts", j.max_attempts},
                      {"current_run_id", j.current_run_id},
                      {"bundle_hash", j.bundle_hash},
                      {"content_hash", j.content_hash},
                      {"source_name", j.source_name},
                      {"submitted_by", j.submitted_by},
                      {"cancelled_by", j.cancelled_by},
                      {"created", time_or_null(j.created_ms)},
                      {"updated", time_or_null(j.updated_ms)},
                      {"simulated", j.simulated},
                      {"verdict", j.verdict ? to_json(*j.verdict) : nlohmann::json(nullptr)}};
  if (with_spec) {
    o["spec"] = j.spec;
    o["spec_yaml"] = j.spec_yaml;
  }
  return o;
}

void append_job_json(std::string& out, const store::JobRecord& j) {
  out += '{';
  key(out, "attempts", true); put(out, std::int64_t{j.attempts});
  key(out, "bundle_hash"); put(out, std::string_view(j.bundle_hash));
  key(out, "campaign"); put(out, std::string_view(j.campaign));
  key(out, "cancelled_by"); put(out, std::string_view(j.cancelled_by));
  key(out, "content_hash"); put(out, std::string_view(j.content_hash));
  key(out, "created"); put_time(out, j.created_ms);
  key(out, "current_run_id"); put(out, j.current_run_id);
  key(out, "gpu"); put(out, std::string_view(j.gpu));
  key(out, "id"); put(out, j.id);
  key(out, "max_attempts"); put(out, std::int64_t{j.max_attempts});
  key(out, "name"); put(out, std::string_view(j.name));
  key(out, "parent"); put(out, std::string_view(j.parent));
  key(out, "priority"); put(out, std::int64_t{j.priority});
  key(out, "regions"); out += '[';
  for (std::size_t i = 0; i < j.regions.size(); ++i) {
    if (i) out += ',';
    put(out, std::string_view(j.regions[i]));
  }
  out += ']';
  key(out, "simulated"); put(out, j.simulated);
  key(out, "source_name"); put(out, std::string_view(j.source_name));
  key(out, "state"); put(out, std::string_view(to_string(j.state)));
  key(out, "state_reason"); put(out, std::string_view(j.state_reason));
  key(out, "submitted_by"); put(out, std::string_view(j.submitted_by));
  key(out, "updated"); put_time(out, j.updated_ms);
  key(out, "verdict");
  if (j.verdict) put(out, to_json(*j.verdict));
  else out += "null";
  out += '}';
}

void append_agent_json(std::string& out, const store::AgentRecord& a) {
  out += '{';
  key(out, "backend", true); put(out, std::string_view(a.backend));
  key(out, "current_run_id"); put(out, a.current_run_id);
  key(out, "enrolled"); put_time(out, a.enrolled_ms);
  key(out, "enrolled_by");
  if (a.enrol_token_id == 0) {
    out += "{\"kind\":\"fleet_token\"}";
  } else {
    out += '{';
    key(out, "enrol_token_id", true); put(out, a.enrol_token_id);
    key(out, "kind"); out += "\"enrol_token\"";
    key(out, "minted_by"); put(out, std::string_view(a.enrol_token_by));
    key(out, "name"); put(out, std::string_view(a.enrol_token_name));
    out += '}';
  }
  key(out, "gpus"); out += '[';
  for (std::size_t i = 0; i < a.gpus.size(); ++i) {
    if (i) out += ',';
    put(out, to_json(a.gpus[i]));
  }
  out += ']';
  key(out, "host"); put(out, std::string_view(a.host));
  key(out, "id"); put(out, a.id);
  key(out, "info"); put(out, a.info);
  key(out, "instance_id"); put(out, std::string_view(a.instance_id));
  key(out, "last_seen"); put_time(out, a.last_seen_ms);
  key(out, "name"); put(out, std::string_view(a.name));
  key(out, "provider"); put(out, std::string_view(a.provider));
  key(out, "region"); put(out, std::string_view(a.region));
  key(out, "simulated"); put(out, a.simulated());
  key(out, "slot"); put(out, std::int64_t{a.slot});
  key(out, "state"); put(out, std::string_view(store::to_string(a.state)));
  out += '}';
}

nlohmann::json run_json(const store::RunRecord& r) {
  return {{"id", r.id},
          {"job_id", r.job_id},
          {"agent_id", r.agent_id},
          {"attempt", r.attempt},
          {"fencing_token", r.fencing_token},
          {"outcome", to_string(r.outcome)},
          {"stage", r.stage},
          {"started", time_or_null(r.started_ms)},
          {"finished", time_or_null(r.finished_ms)},
          {"lease_expires", time_or_null(r.lease_expires_ms)},
          {"verdict", r.verdict ? to_json(*r.verdict) : nlohmann::json(nullptr)},
          {"simulated", r.simulated},
          {"events_contiguous", r.events_contiguous},
          {"host", r.host},
          {"slot", r.slot},
          {"host_exclusive", r.host_exclusive}};
}

nlohmann::json agent_json(const store::AgentRecord& a) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : a.gpus) gpus.push_back(to_json(g));
  return {{"id", a.id},
          {"name", a.name},
          {"region", a.region},
          {"backend", a.backend},
          {"provider", a.provider},
          {"instance_id", a.instance_id},
          {"state", store::to_string(a.state)},
          {"current_run_id", a.current_run_id},
          {"host", a.host},
          {"slot", a.slot},
          {"gpus", gpus},
          {"enrolled", time_or_null(a.enrolled_ms)},
          {"last_seen", time_or_null(a.last_seen_ms)},
          {"simulated", a.simulated()},
          {"enrolled_by", a.enrol_token_id == 0
                              ? nlohmann::json{{"kind", "fleet_token"}}
                              : nlohmann::json{{"kind", "enrol_token"},
                                               {"enrol_token_id", a.enrol_token_id},
                                               {"name", a.enrol_token_name},
                                               {"minted_by", a.enrol_token_by}}},
          {"info", a.info}};
}

nlohmann::json block_json(const store::RegionBlock& b, TimeMs now) {
  return {{"provider", b.provider}, {"region", b.region},
          {"gpu_class", b.gpu_class}, {"kind", b.kind},
          {"reason", b.reason},     {"strikes", b.strikes},
          {"since", time_or_null(b.since_ms)}, {"until", time_or_null(b.until_ms)},
          {"seconds_left", b.until_ms > now ? (b.until_ms - now) / 1000.0 : 0.0}};
}

}  // namespace kfleet::api
