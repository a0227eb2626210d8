#pragma once
// kfleetd's entry to the terraform provisioner: a JSON config file in, a Provisioner out.
#include <filesystem>

#include <boost/asio/any_io_executor.hpp>

#include "kfleet/common/result.hpp"
#include "kfleet/provision/provisioner.hpp"
#include "kfleet/provision_terraform/terraform_provisioner.hpp"

namespace kfleet::provision {

// Reads {"terraform_dir", "state_root", "regions": [...], "owner", "cost_center", and optionally
// "server_url", "enrol_token", "terraform_binary", "plugin_dir", "instance_type",
// "capacity_budget", "aws_max_retries", "apply_budget_s", "vars": {}, "env": {},
// "price_table": "<file>"}. Errors name the file and the key to fix.
Result<TerraformConfig> load_terraform_config(const std::filesystem::path& file);

// As make_terraform_provisioner(config, executor, clock) with the system clock. A config it cannot
// run yields a provisioner that answers every request `fatal` with the reason, so kfleetd starts
// and the user sees why the fleet does not grow.
ProvisionerPtr make_terraform_provisioner(boost::asio::any_io_executor control_plane, TerraformConfig config);

}  // namespace kfleet::provision
