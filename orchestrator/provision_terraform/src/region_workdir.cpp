#include "region_workdir.hpp"

#include <fstream>
#include <mutex>

#include <nlohmann/json.hpp>

namespace kfleet::provision {
namespace fs = std::filesystem;
namespace {

constexpr double kInitBudgetS = 300;
constexpr double kOutputBudgetS = 60;

// Terraform's plugin cache is not safe for concurrent installs, and every region shares it.
std::mutex g_init_mutex;

// Only configuration travels: never another directory's state, lock or .terraform.
bool is_config_file(const fs::path& p) {
  auto ext = p.extension().string();
  return ext == ".tf" || ext == ".tftpl" || ext == ".service" || ext == ".sh";
}

Result<void> copy_config_tree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return make_error(Errc::unavailable, "cannot create " + to.string() + ": " + ec.message());
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (it->is_directory() && (name == ".terraform" || name == "tests" || name == "terraform.tfstate.d")) {
      it.disable_recursion_pending();
      continue;
    }
    auto rel = fs::relative(it->path(), from);
    if (it->is_directory()) {
      fs::create_directories(to / rel, ec);
    } else if (it->is_regular_file() && is_config_file(it->path())) {
      fs::copy_file(it->path(), to / rel, fs::copy_options::overwrite_existing, ec);
    }
    if (ec) return make_error(Errc::unavailable, "copying " + it->path().string() + ": " + ec.message());
  }
  if (ec) return make_error(Errc::unavailable, "reading " + from.string() + ": " + ec.message());
  return ok_result();
}

std::string hcl_string_list(const std::vector<std::string>& items) {
  return nlohmann::json(items).dump();  // a JSON array of strings is valid HCL
}

}  // namespace

Placement parse_placement(const std::string& s) {
  if (!s.empty() && s.back() >= 'a' && s.back() <= 'z') return {s.substr(0, s.size() - 1), s};
  return {s, ""};
}

Result<fs::path> write_cli_config(const TerraformConfig& config) {
  std::error_code ec;
  fs::create_directories(config.state_root, ec);
  if (ec) return make_error(Errc::unavailable, "cannot create " + config.state_root.string() + ": " + ec.message());
  fs::path file = config.state_root / "terraformrc";
  std::ofstream out(file, std::ios::trunc);
  if (!config.plugin_dir.empty()) {
    // An unpacked local mirror is linked into each region's .terraform, never copied. A plugin
    // cache on top of it would copy the provider (hundreds of MB) into every state root and
    // link the regions to that copy: slower, and one more shared thing whose half-written
    // state another region's init could read.
    out << "provider_installation {\n  filesystem_mirror {\n    path = "
        << nlohmann::json(config.plugin_dir).dump() << "\n  }\n}\n";
  } else {
    // From the registry: download each provider once for every region of this kfleetd.
    fs::create_directories(config.state_root / ".plugin-cache", ec);
    if (ec) return make_error(Errc::unavailable, "cannot create the plugin cache: " + ec.message());
    out << "plugin_cache_dir = " << nlohmann::json((config.state_root / ".plugin-cache").string()).dump() << "\n";
  }
  if (!out) return make_error(Errc::unavailable, "cannot write " + file.string());
  return file;
}

RegionWorkdir::RegionWorkdir(const TerraformConfig& config, std::string region_or_zone)
    : config_(config),
      key_(std::move(region_or_zone)),
      placement_(parse_placement(key_)),
      dir_(config.state_root / key_),
      fleet_dir_(dir_ / "fleet") {}

std::map<std::string, std::string> RegionWorkdir::environment() const {
  std::map<std::string, std::string> env = config_.env;
  env["TF_CLI_CONFIG_FILE"] = (config_.state_root / "terraformrc").string();
  env["TF_IN_AUTOMATION"] = "1";
  env["TF_INPUT"] = "0";
  env["CHECKPOINT_DISABLE"] = "1";
  env["TF_VAR_enrol_token"] = config_.enrol_token;  // argv is world-readable in /proc
  // The module writes it to /etc/kfleet/ca.pem (0600) and gives it to the agents as
  // KFLEET_CA_FILE, their --ca-file.
  if (!config_.server_ca_pem.empty()) env["TF_VAR_server_ca_pem"] = config_.server_ca_pem;
  return env;
}

Result<ProcessRun> RegionWorkdir::terraform(std::vector<std::string> args, double budget_s,
                                            const std::map<std::string, std::string>& more_env) {
  args.insert(args.begin(), config_.terraform_binary);
  auto env = environment();
  for (const auto& [k, v] : more_env) env[k] = v;
  return run_process(args, fleet_dir_, env, budget_s);
}

Result<void> RegionWorkdir::prepare() {
  if (auto r = copy_config_tree(config_.terraform_dir / "fleet", fleet_dir_); !r) return r;
  if (auto r = copy_config_tree(config_.terraform_dir / "modules", dir_ / "modules"); !r) return r;
  if (fs::exists(fleet_dir_ / ".terraform" / "modules" / "modules.json")) return ok_result();
  std::lock_guard lock(g_init_mutex);
  auto run = terraform({"init", "-input=false", "-no-color"}, kInitBudgetS);
  if (!run) return run.error();
  if (run->exit_code != 0) {
    return make_error(Errc::unavailable, "terraform init in " + fleet_dir_.string() +
                                             " failed: " + run->output);
  }
  return ok_result();
}

std::vector<std::string> RegionWorkdir::var_args(const std::vector<std::string>& slots) const {
  std::map<std::string, std::string> vars = {
      {"region", placement_.region},
      {"server_url", config_.server_url},
      {"owner", config_.owner},
      {"cost_center", config_.cost_center},
      {"instance_type", config_.instance_type},
      {"aws_max_retries", std::to_string(config_.aws_max_retries)},
      {"agent_slots", hcl_string_list(slots)},
  };
  if (!placement_.zone.empty()) vars["availability_zone"] = placement_.zone;
  for (const auto& [k, v] : config_.vars) vars[k] = v;
  std::vector<std::string> args;
  for (const auto& [k, v] : vars) {
    args.push_back("-var");
    args.push_back(k + "=" + v);
  }
  return args;
}

Result<ProcessRun> RegionWorkdir::apply(const std::vector<std::string>& slots,
                                        const std::map<std::string, std::string>& slot_tokens) {
  std::vector<std::string> args{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=30s"};
  for (auto& a : var_args(slots)) args.push_back(std::move(a));
  std::map<std::string, std::string> env;
  // A JSON object is an HCL map value; like the fleet's token, only ever in the environment.
  if (!slot_tokens.empty()) env["TF_VAR_enrol_tokens"] = nlohmann::json(slot_tokens).dump();
  return terraform(std::move(args), config_.apply_budget_s, env);
}

Result<ProcessRun> RegionWorkdir::destroy() {
  std::vector<std::string> args{"destroy", "-auto-approve", "-json", "-input=false", "-lock-timeout=30s"};
  for (auto& a : var_args({})) args.push_back(std::move(a));
  return terraform(std::move(args), config_.apply_budget_s);
}

Result<std::map<std::string, AgentInstance>> RegionWorkdir::instances() {
  if (!fs::exists(fleet_dir_ / "terraform.tfstate")) return std::map<std::string, AgentInstance>{};
  auto run = terraform({"output", "-json", "-no-color"}, kOutputBudgetS);
  if (!run) return run.error();
  if (run->exit_code != 0) {
    return make_error(Errc::unavailable, "terraform output in " + fleet_dir_.string() +
                                             " failed: " + run->output);
  }
  return parse_instances_output(run->output);
}

}  // namespace kfleet::provision
