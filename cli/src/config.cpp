#include "kfleet/cli/config.hpp"

#include <yaml-cpp/yaml.h>

namespace kfleet::cli {

std::string normalize_server_url(std::string url) {
  // Several servers (a kfleetd leader and its standbys) come comma-separated; each is
  // normalised on its own.
  if (auto comma = url.find(','); comma != std::string::npos) {
    std::string head = normalize_server_url(url.substr(0, comma));
    std::string tail = normalize_server_url(url.substr(comma + 1));
    if (head.empty()) return tail;
    return tail.empty() ? head : head + "," + tail;
  }
  while (!url.empty() && (url.back() == '/' || url.back() == ' ')) url.pop_back();
  while (!url.empty() && url.front() == ' ') url.erase(0, 1);
  if (!url.empty() && url.find("://") == std::string::npos) url = "http://" + url;
  return url;
}

std::string default_config_path(const EnvLookup& env) {
  if (auto xdg = env("XDG_CONFIG_HOME"); xdg && !xdg->empty()) return *xdg + "/kfleet/config.yaml";
  if (auto home = env("HOME"); home && !home->empty()) return *home + "/.config/kfleet/config.yaml";
  return "";
}

namespace {

struct FileValues {
  std::string server, token, ca_file;
};

Result<FileValues> parse_config_text(const std::string& text, const std::string& path) {
  FileValues v;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return make_error(Errc::invalid_argument,
                      path + ":" + std::to_string(e.mark.line + 1) + ":" +
                          std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg);
  }
  if (root.IsNull()) return v;  // an empty file configures nothing
  if (!root.IsMap())
    return make_error(Errc::invalid_argument,
                      path + ": expected a mapping with keys server: and token:");
  for (const auto& kv : root) {
    const auto key = kv.first.as<std::string>("");
    const auto line = std::to_string(kv.first.Mark().line + 1);
    if (!kv.second.IsScalar())
      return make_error(Errc::invalid_argument, path + ":" + line + ": " + key + ": must be a string");
    if (key == "server") {
      v.server = kv.second.as<std::string>("");
    } else if (key == "token") {
      v.token = kv.second.as<std::string>("");
    } else if (key == "ca_file") {
      v.ca_file = kv.second.as<std::string>("");
    } else {
      return make_error(Errc::invalid_argument,
                        path + ":" + line + ": unknown key '" + key +
                            "' (the config knows server:, token: and ca_file:)");
    }
  }
  return v;
}

std::string first_set(std::initializer_list<std::string> candidates) {
  for (const auto& c : candidates)
    if (!c.empty()) return c;
  return "";
}

}  // namespace

Result<CliConfig> resolve_config(const ConfigFlags& flags, const EnvLookup& env,
                                 const FileReader& read_file) {
  auto env_or_empty = [&](const char* name) { return env(name).value_or(""); };

  std::string path = first_set({flags.config, env_or_empty("KFLEET_CONFIG")});
  const bool explicit_path = !path.empty();
  if (!explicit_path) path = default_config_path(env);

  FileValues file;
  CliConfig out;
  if (!path.empty()) {
    auto text = read_file(path);
    if (text) {
      auto parsed = parse_config_text(*text, path);
      if (!parsed) return parsed.error();
      file = *parsed;
      out.config_path = path;
    } else if (explicit_path) {
      return make_error(Errc::invalid_argument,
                        "cannot read config file " + path +
                            " (from --config or KFLEET_CONFIG): check the path");
    }
  }

  out.server = normalize_server_url(
      first_set({flags.server, env_or_empty("KFLEET_SERVER"), file.server, default_server}));
  out.token = first_set({flags.token, env_or_empty("KFLEET_TOKEN"), file.token});
  out.ca_file = first_set({flags.ca_file, env_or_empty("KFLEET_CA_FILE"), file.ca_file});
  out.insecure = flags.insecure;
  return out;
}

}  // namespace kfleet::cli
