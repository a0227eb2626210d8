// SimulatedCloudConfig from JSON, with errors that name the field to fix.
#include <fstream>
#include <set>
#include <sstream>

#include "cloud_messages.hpp"
#include "kfleet/common/pem.hpp"
#include "kfleet/provision/simulated_cloud.hpp"

namespace kfleet::provision {

namespace {

Error bad(const std::string& what) {
  return make_error(Errc::invalid_argument, "simulated cloud config: " + what);
}

Result<std::string> get_string(const nlohmann::json& j, const char* key, bool required) {
  if (!j.contains(key)) {
    if (required) return bad(std::string("missing \"") + key + "\"");
    return std::string();
  }
  if (!j[key].is_string()) return bad(std::string("\"") + key + "\" must be a string");
  return j[key].get<std::string>();
}

Result<int> get_int(const nlohmann::json& j, const char* key, int fallback, const std::string& where) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_number_integer() || j[key].get<long long>() < 0)
    return bad(where + "\"" + key + "\" must be a non-negative integer");
  return j[key].get<int>();
}

Result<SimulatedRegion> region_from_json(const nlohmann::json& j, std::size_t index) {
  const std::string where = "regions[" + std::to_string(index) + "].";
  if (!j.is_object()) return bad(where.substr(0, where.size() - 1) + " must be an object");
  SimulatedRegion r;
  auto name = get_string(j, "name", true);
  if (!name) return name.error();
  if (name->empty()) return bad(where + "name must not be empty");
  r.name = *name;
  for (auto [key, field] : {std::pair{"gpu", &r.gpu}, std::pair{"arch", &r.arch},
                            std::pair{"instance_type", &r.instance_type}}) {
    auto v = get_string(j, key, false);
    if (!v) return v.error();
    if (!v->empty()) *field = *v;
  }
  auto cap = get_int(j, "capacity", r.capacity, where);
  if (!cap) return cap.error();
  r.capacity = *cap;
  auto delay = get_int(j, "delay_ms", r.delay_ms, where);
  if (!delay) return delay.error();
  r.delay_ms = *delay;
  if (j.contains("script")) {
    if (!j["script"].is_array()) return bad(where + "script must be a list of outcomes");
    for (const auto& w : j["script"]) {
      if (!w.is_string() || !detail::outcome_of_script_word(w.get<std::string>()))
        return bad(where + "script has " + w.dump() +
                   "; use ok, stockout, unsupported, quota, auth or throttle");
      r.script.push_back(w.get<std::string>());
    }
  }
  return r;
}

}  // namespace

Result<SimulatedCloudConfig> simulated_cloud_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return bad("expected a JSON object");
  SimulatedCloudConfig c;
  for (auto [key, field] : {std::pair{"agent_binary", &c.agent_binary},
                            std::pair{"server_url", &c.server_url},
                            std::pair{"enrol_token", &c.enrol_token},
                            std::pair{"work_root", &c.work_root}}) {
    auto v = get_string(j, key, /*required=*/std::string(key) != "enrol_token");
    if (!v) return v.error();
    *field = *v;
  }
  auto ca = get_string(j, "server_ca_pem", false);
  if (!ca) return ca.error();
  if (!ca->empty()) {
    if (auto why = pem_certificates_problem(*ca); !why.empty())
      return bad("\"server_ca_pem\" must be the PEM CA certificate that signed kfleetd's: " + why);
    c.server_ca_pem = *ca;
  }
  auto max = get_int(j, "max_instances", c.max_instances, "");
  if (!max) return max.error();
  c.max_instances = *max;
  auto grace = get_int(j, "release_grace_ms", c.release_grace_ms, "");
  if (!grace) return grace.error();
  c.release_grace_ms = *grace;
  if (!j.contains("regions") || !j["regions"].is_array() || j["regions"].empty())
    return bad("\"regions\" must list at least one region");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < j["regions"].size(); ++i) {
    auto r = region_from_json(j["regions"][i], i);
    if (!r) return r.error();
    if (!seen.insert(r->name).second) return bad("region '" + r->name + "' is listed twice");
    c.regions.push_back(std::move(*r));
  }
  return c;
}

Result<SimulatedCloudConfig> load_simulated_cloud_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(Errc::not_found, "cannot read simulated cloud config '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return make_error(Errc::invalid_argument, "simulated cloud config '" + path + "' is not valid JSON");
  auto c = simulated_cloud_config_from_json(j);
  if (!c) return make_error(c.error().code, c.error().message + " (in " + path + ")");
  return c;
}

}  // namespace kfleet::provision
