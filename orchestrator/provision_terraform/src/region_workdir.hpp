#pragma once
// One region's (or zone's) terraform working directory: a private copy of terraform/fleet and
// terraform/modules plus that region's own state, so no region's failure or lock touches another.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kfleet/common/result.hpp"
#include "kfleet/provision_terraform/terraform_output.hpp"
#include "kfleet/provision_terraform/terraform_provisioner.hpp"
#include "subprocess.hpp"

namespace kfleet::provision {

// "us-east-1a" -> {"us-east-1", "us-east-1a"}; "us-east-1" -> {"us-east-1", ""}.
struct Placement {
  std::string region;
  std::string zone;
};
Placement parse_placement(const std::string& region_or_zone);

class RegionWorkdir {
 public:
  RegionWorkdir(const TerraformConfig& config, std::string region_or_zone);

  // Copies the configuration in (every time: an upgraded kfleetd brings its new .tf files) and
  // runs terraform init once. Errors carry terraform's own words.
  Result<void> prepare();
  // terraform apply with exactly these slots; the run's result, whatever it was.
  // `slot_tokens`: enrolment tokens of their own for some slots (TF_VAR_enrol_tokens, never
  // argv); a slot without one gets the fleet's.
  Result<ProcessRun> apply(const std::vector<std::string>& slots,
                           const std::map<std::string, std::string>& slot_tokens = {});
  Result<ProcessRun> destroy();
  // The instances in this region's state (empty before the first apply).
  Result<std::map<std::string, AgentInstance>> instances();

  const std::filesystem::path& root_dir() const { return fleet_dir_; }

  // What terraform gets: -var arguments (visible to every local user in /proc, so no secret
  // goes there) and its environment (the enrolment token and the CA, as TF_VAR_*).
  std::vector<std::string> var_args(const std::vector<std::string>& slots) const;
  std::map<std::string, std::string> environment() const;

 private:
  Result<ProcessRun> terraform(std::vector<std::string> args, double budget_s,
                               const std::map<std::string, std::string>& more_env = {});

  const TerraformConfig& config_;
  std::string key_;
  Placement placement_;
  std::filesystem::path dir_;
  std::filesystem::path fleet_dir_;
};

// Writes the CLI config all regions share: the provider mirror and a plugin cache, so that a
// new region's init links the provider instead of copying it.
Result<std::filesystem::path> write_cli_config(const TerraformConfig& config);

}  // namespace kfleet::provision
