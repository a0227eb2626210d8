#include "kfleet/cli/change_view.hpp"

namespace kfleet::cli {

namespace {

std::string str(const nlohmann::json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "";
}

std::string scalar(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// "-D NAME=1 (was 0)" lines and "flag -O3" lines, in a fixed order: removed, changed, added.
std::string setting_lines(const nlohmann::json& c, const std::string& indent) {
  std::string out;
  if (c.contains("defines") && c["defines"].is_object()) {
    const auto& d = c["defines"];
    for (const char* kind : {"removed", "changed", "added"}) {
      if (!d.contains(kind) || !d[kind].is_object()) continue;
      for (auto it = d[kind].begin(); it != d[kind].end(); ++it) {
        if (std::string(kind) == "removed")
          out += indent + "- define " + it.key() + "=" + scalar(it.value()) + "\n";
        else if (std::string(kind) == "changed")
          out += indent + "~ define " + it.key() + "=" + scalar(it.value().value("to", nlohmann::json())) +
                 " (was " + scalar(it.value().value("from", nlohmann::json())) + ")\n";
        else
          out += indent + "+ define " + it.key() + "=" + scalar(it.value()) + "\n";
      }
    }
  }
  if (c.contains("flags") && c["flags"].is_object()) {
    for (const char* kind : {"removed", "added"}) {
      if (!c["flags"].contains(kind) || !c["flags"][kind].is_array()) continue;
      for (const auto& f : c["flags"][kind])
        out += indent + (std::string(kind) == "removed" ? "- flag " : "+ flag ") + scalar(f) + "\n";
    }
  }
  if (c.contains("other") && c["other"].is_array())
    for (const auto& o : c["other"])
      out += indent + "~ " + str(o, "field") + ": " + o.value("from", nlohmann::json()).dump() + " -> " +
             o.value("to", nlohmann::json()).dump() + "\n";
  return out;
}

std::string against(const nlohmann::json& c) {
  std::string s = "against job " + std::to_string(c.value("parent_job_id", 0));
  if (!str(c, "parent_name").empty()) s += " " + str(c, "parent_name");
  return s;
}

}  // namespace

std::string render_change_text(const nlohmann::json& c, const std::string& indent) {
  if (!c.is_object()) return "";
  std::string out = str(c, "summary") + " (" + against(c) + ")\n";
  out += setting_lines(c, indent);
  if (c.contains("files") && c["files"].is_array())
    for (const auto& f : c["files"]) {
      std::string diff = str(f, "diff");
      std::size_t start = 0;
      while (start < diff.size()) {
        auto nl = diff.find('\n', start);
        out += indent + diff.substr(start, nl == std::string::npos ? std::string::npos : nl - start) + "\n";
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    }
  return out;
}

std::string render_change_markdown(const nlohmann::json& c) {
  if (!c.is_object()) return "";
  std::string out = "## Change against the parent\n\n**" + str(c, "summary") + "** (" + against(c) + ")\n\n";
  const std::string settings = setting_lines(c, "");
  if (!settings.empty()) out += "```\n" + settings + "```\n\n";
  if (c.contains("files") && c["files"].is_array())
    for (const auto& f : c["files"])
      if (!str(f, "diff").empty()) out += "```diff\n" + str(f, "diff") + "```\n\n";
  return out;
}

}  // namespace kfleet::cli
