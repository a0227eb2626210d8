#include "kfleet/provision_terraform/terraform_output.hpp"

#include <sstream>

#include <nlohmann/json.hpp>

namespace kfleet::provision {
namespace {

// j[key] when j is an object holding a string there, else "": nlohmann's value() throws on a
// member of another type, and these documents come from outside.
std::string string_at(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string error_text_from_json_log(std::string_view log) {
  std::istringstream lines{std::string(log)};
  std::string line, errors, raw_tail;
  bool saw_json = false;
  while (std::getline(lines, line)) {
    auto entry = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (entry.is_discarded() || !entry.is_object()) {
      raw_tail += line + "\n";
      continue;
    }
    saw_json = true;
    if (string_at(entry, "type") != "diagnostic") continue;
    const auto& d = entry.contains("diagnostic") ? entry["diagnostic"] : nlohmann::json::object();
    if (string_at(d, "severity") != "error") continue;
    std::string summary = string_at(d, "summary");
    std::string detail = string_at(d, "detail");
    errors += summary;
    if (!detail.empty()) errors += ": " + detail;
    errors += "\n";
  }
  if (!errors.empty()) return errors;
  // Terraform writes some early failures (bad flags, init problems) as plain text.
  constexpr std::size_t kTail = 4000;
  std::string text = saw_json ? raw_tail : std::string(log);
  if (text.size() > kTail) text = text.substr(text.size() - kTail);
  return text;
}

Result<std::map<std::string, AgentInstance>> parse_instances_output(std::string_view json_text) {
  auto doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return make_error(Errc::internal, "terraform output -json did not print a JSON object");
  }
  std::map<std::string, AgentInstance> out;
  if (!doc.contains("instances")) return out;  // no state yet
  const auto& instances = doc["instances"];
  const auto value = instances.is_object() ? instances.value("value", nlohmann::json::object())
                                           : nlohmann::json();
  if (!value.is_object()) return make_error(Errc::internal, "output 'instances' is not a map");
  for (const auto& [slot, inst] : value.items()) {
    if (!inst.is_object()) continue;
    auto str = [&](const char* key) { return string_at(inst, key); };
    out.emplace(slot, AgentInstance{slot, str("id"), str("private_ip"), str("public_ip"),
                                    str("availability_zone"), str("instance_type")});
  }
  return out;
}

}  // namespace kfleet::provision
