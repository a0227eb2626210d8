#pragma once
// Where the CLI finds kfleetd and its token: flag, then environment, then config file, then
// the default. Pure: the environment and the file system come in as functions.
#include <functional>
#include <optional>
#include <string>

#include "kfleet/common/result.hpp"

namespace kfleet::cli {

inline constexpr const char* default_server = "http://127.0.0.1:8470";

struct ConfigFlags {
  std::string server;  // "" = not given
  std::string token;   // read from --token-file (never taken from argv)
  std::string config;
  std::string ca_file;
  bool insecure = false;
};

struct CliConfig {
  std::string server;       // normalized: scheme present, no trailing slash
  std::string token;        // "" = none
  std::string config_path;  // the file consulted ("" when none exists)
  std::string ca_file;      // PEM CA for an https:// kfleetd ("" = the system's)
  bool insecure = false;    // do not verify kfleetd's certificate (loud)
};

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;

// Resolves server and token. A config file named explicitly (--config, KFLEET_CONFIG) must
// exist; the default one (~/.config/kfleet/config.yaml) is optional. A malformed file or an
// unknown key is an invalid_argument error naming the file.
Result<CliConfig> resolve_config(const ConfigFlags& flags, const EnvLookup& env,
                                 const FileReader& read_file);

// "host:8470" -> "http://host:8470"; drops a trailing slash.
std::string normalize_server_url(std::string url);

// The default config path from $XDG_CONFIG_HOME or $HOME ("" when neither is set).
std::string default_config_path(const EnvLookup& env);

}  // namespace kfleet::cli
