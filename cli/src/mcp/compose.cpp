#include "compose.hpp"

#include <algorithm>

#include <yaml-cpp/yaml.h>

namespace kfleet::cli::mcp {

bool ChildChange::empty() const {
  return files.empty() && defines_set.empty() && defines_removed.empty() && flags_added.empty() &&
         flags_removed.empty();
}

namespace {

Result<std::vector<std::string>> strings(const nlohmann::json& j, const std::string& field) {
  std::vector<std::string> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return make_error(Errc::invalid_argument, field + " must be a list of strings");
  for (const auto& v : j) {
    if (!v.is_string() || v.get<std::string>().empty())
      return make_error(Errc::invalid_argument, field + " must hold non-empty strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::string scalar_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  return v.dump();
}

}  // namespace

Result<Bundle> bundle_from_files(const nlohmann::json& files) {
  Bundle b;
  if (files.is_null()) return b;
  if (!files.is_array())
    return make_error(Errc::invalid_argument, "files must be a list of {path, content}");
  for (const auto& f : files) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("content") ||
        !f["content"].is_string())
      return make_error(Errc::invalid_argument, "each file needs path and content (strings)");
    auto path = normalize_bundle_path(f["path"].get<std::string>());
    if (!path) return make_error(Errc::invalid_argument, "file " + f["path"].get<std::string>() +
                                                             ": " + path.error().message);
    if (std::any_of(b.files.begin(), b.files.end(), [&](const BundleFile& x) { return x.path == *path; }))
      return make_error(Errc::invalid_argument, "file " + *path + " is given twice");
    b.files.push_back({*path, f["content"].get<std::string>()});
  }
  std::sort(b.files.begin(), b.files.end(),
            [](const BundleFile& x, const BundleFile& y) { return x.path < y.path; });
  return b;
}

Result<ChildChange> parse_change(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(Errc::invalid_argument, "change must be an object");
  ChildChange c;
  auto files = bundle_from_files(j.value("files", nlohmann::json()));
  if (!files) return make_error(Errc::invalid_argument, "change.files: " + files.error().message);
  c.files = std::move(files->files);
  if (j.contains("defines_set")) {
    if (!j["defines_set"].is_object())
      return make_error(Errc::invalid_argument, "change.defines_set must be an object {NAME: value}");
    for (auto it = j["defines_set"].begin(); it != j["defines_set"].end(); ++it) {
      if (it.value().is_object() || it.value().is_array() || it.value().is_null())
        return make_error(Errc::invalid_argument,
                          "change.defines_set." + it.key() + " must be a string or a number");
      c.defines_set.emplace_back(it.key(), scalar_text(it.value()));
    }
  }
  for (auto [field, out] : {std::pair{"defines_removed", &c.defines_removed},
                            std::pair{"flags_added", &c.flags_added},
                            std::pair{"flags_removed", &c.flags_removed}}) {
    auto v = strings(j.value(field, nlohmann::json()), std::string("change.") + field);
    if (!v) return v.error();
    *out = std::move(*v);
  }
  if (c.empty())
    return make_error(Errc::invalid_argument,
                      "change is empty: give files, defines_set, defines_removed, flags_added or "
                      "flags_removed");
  return c;
}

Result<Child> compose_child(const std::string& parent_yaml, const Bundle& parent_bundle,
                            const std::string& child_name, const std::string& parent_name,
                            const ChildChange& c) {
  YAML::Node root;
  try {
    root = YAML::Load(parent_yaml);
  } catch (const YAML::Exception& e) {
    return make_error(Errc::invalid_argument, "the parent's YAML does not parse: " + e.msg);
  }
  if (!root.IsMap() || !root["kernel"] || !root["kernel"].IsMap())
    return make_error(Errc::invalid_argument, "the parent's YAML has no kernel: mapping");
  root["name"] = child_name;
  root["parent"] = parent_name;
  YAML::Node kernel = root["kernel"];

  if (!c.defines_set.empty() || !c.defines_removed.empty()) {
    YAML::Node defines = kernel["defines"];
    if (!defines || defines.IsNull()) defines = YAML::Node(YAML::NodeType::Map);
    if (!defines.IsMap()) return make_error(Errc::invalid_argument, "the parent's kernel.defines is not a mapping");
    for (const auto& name : c.defines_removed) {
      if (!defines[name])
        return make_error(Errc::invalid_argument, "defines_removed: the parent does not define " + name);
      defines.remove(name);
    }
    for (const auto& [name, value] : c.defines_set) defines[name] = value;
    if (defines.size() == 0) kernel.remove("defines");
    else kernel["defines"] = defines;
  }

  if (!c.flags_added.empty() || !c.flags_removed.empty()) {
    std::vector<std::string> flags;
    if (kernel["flags"]) {
      if (!kernel["flags"].IsSequence())
        return make_error(Errc::invalid_argument, "the parent's kernel.flags is not a list");
      for (const auto& f : kernel["flags"]) flags.push_back(f.as<std::string>());
    }
    for (const auto& f : c.flags_removed) {
      auto it = std::find(flags.begin(), flags.end(), f);
      if (it == flags.end())
        return make_error(Errc::invalid_argument, "flags_removed: the parent has no flag " + f);
      flags.erase(it);
    }
    for (const auto& f : c.flags_added) {
      if (std::find(flags.begin(), flags.end(), f) != flags.end())
        return make_error(Errc::invalid_argument, "flags_added: the parent already has flag " + f);
      flags.push_back(f);
    }
    if (flags.empty()) {
      kernel.remove("flags");
    } else {
      YAML::Node seq(YAML::NodeType::Sequence);
      for (const auto& f : flags) seq.push_back(f);
      seq.SetStyle(YAML::EmitterStyle::Flow);
      kernel["flags"] = seq;
    }
  }

  Child child;
  child.bundle = parent_bundle;
  for (const auto& f : c.files) {
    auto it = std::find_if(child.bundle.files.begin(), child.bundle.files.end(),
                           [&](const BundleFile& x) { return x.path == f.path; });
    if (it == child.bundle.files.end()) {
      std::string have;
      for (const auto& x : parent_bundle.files) have += (have.empty() ? "" : ", ") + x.path;
      return make_error(Errc::invalid_argument, "change.files: the parent has no file " + f.path +
                                                    " (it has " + have + "); a change replaces "
                                                    "files the parent has");
    }
    it->content = f.content;
  }
  YAML::Emitter out;
  out << root;
  if (!out.good()) return make_error(Errc::internal, "cannot write the child's YAML: " + out.GetLastError());
  child.yaml = std::string(out.c_str()) + "\n";
  return child;
}

}  // namespace kfleet::cli::mcp
