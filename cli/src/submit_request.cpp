#include "kfleet/cli/submit_request.hpp"

#include <yaml-cpp/yaml.h>

#include "json_fields.hpp"

namespace kfleet::cli {

Result<std::string> with_priority(const std::string& yaml_text, int priority) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return make_error(Errc::invalid_argument, "not valid YAML: " + e.msg);
  }
  if (!root.IsMap())
    return make_error(Errc::invalid_argument, "a job file must be a mapping to take --priority");
  const std::string value = std::to_string(priority);
  if (auto existing = root["priority"]; existing && existing.IsScalar()) {
    const auto mark = existing.Mark();
    const std::string old = existing.Scalar();
    if (mark.pos < 0 || yaml_text.compare(static_cast<std::size_t>(mark.pos), old.size(), old) != 0)
      return make_error(Errc::invalid_argument,
                        "cannot rewrite `priority:` in place; edit it in the YAML instead");
    std::string out = yaml_text;
    out.replace(static_cast<std::size_t>(mark.pos), old.size(), value);
    return out;
  }
  if (root.Style() == YAML::EmitterStyle::Flow)
    return make_error(Errc::invalid_argument,
                      "cannot add --priority to a flow-style job file; add `priority:` to it");
  std::string out = yaml_text;
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + "priority: " + value + "\n";
}

nlohmann::json submit_body(const std::string& yaml_text, const std::string& source_name,
                           const Bundle& bundle, bool force) {
  return {{"spec_yaml", yaml_text},
          {"source_name", source_name},
          {"bundle", bundle_to_json(bundle)},
          {"force", force}};
}

std::string submitted_line(const nlohmann::json& job) {
  std::string regions;
  for (const auto& r : arr_field(job, "regions"))
    if (r.is_string()) regions += (regions.empty() ? "" : ", ") + r.get<std::string>();
  return "submitted job " + str_field(job, "id") + " " + str_field(job, "name") + " (" +
         str_field(job, "gpu") + ", " + (regions.empty() ? "any region" : "regions " + regions) +
         ")";
}

std::string duplicate_line(const nlohmann::json& job, std::int64_t duplicate_of) {
  const auto& v = obj_field(job, "verdict");
  std::string verdict = str_field(v, "outcome");
  if (verdict.empty()) verdict = str_field(job, "state");
  if (auto gate = str_field(v, "gate"); !gate.empty()) verdict += " " + gate;
  return "identical to job " + std::to_string(duplicate_of) + " (verdict " +
         (verdict.empty() ? "unknown" : verdict) +
         "): not run again; use --force to run it anyway";
}

std::string dashboard_url(const std::string& server, std::int64_t job_id) {
  return server + "/#/jobs/" + std::to_string(job_id);
}

}  // namespace kfleet::cli
