#pragma once
// The terraform provisioner: grows the L4 fleet one region (or zone) at a time by applying
// terraform/fleet in a working directory of its own per region, and releases agents by slot.
// Applies run as subprocesses on worker threads (one at a time per region); completions are
// posted to the control-plane executor.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "kfleet/common/clock.hpp"
#include "kfleet/provision/provisioner.hpp"
#include "kfleet/provision_terraform/price_table.hpp"

namespace kfleet::provision {

struct TerraformConfig {
  std::filesystem::path terraform_dir;  // the repository's terraform/ (holds fleet/ and modules/)
  std::filesystem::path state_root;     // working directories, one per region, live beneath it
  std::string terraform_binary = "terraform";
  std::string plugin_dir;               // provider mirror (e.g. /opt/tf-plugins); empty: registry
  std::vector<std::string> regions;     // "us-east-1", or a zone "us-east-1a" for a per-zone state
  std::string server_url;               // what agents enrol with
  std::string enrol_token;              // reaches terraform as TF_VAR_enrol_token, never argv
  // Per-slot enrolment: when set, each new slot's user data carries an enrolment token of its
  // own (TF_VAR_enrol_tokens), minted by kfleetd with one use per GPU, instead of the fleet's.
  // AWS names an instance only once it exists, so the token is not bound to an instance id.
  // Called with the slot and its GPU count on the thread that calls request() (kfleetd's
  // control plane); it returns the token's secret.
  std::function<Result<std::string>(const std::string& slot, int uses)> mint_enrol_token;
  bool per_instance_enrolment = true;
  std::string server_ca_pem;            // CA of kfleetd's certificate: TF_VAR_server_ca_pem
  std::string owner;
  std::string cost_center;
  std::string instance_type = "g6.xlarge";
  int capacity_budget = 4;              // agents this provisioner may run over all regions
  int aws_max_retries = 1;              // low, so that a stockout comes back in seconds
  double apply_budget_s = 900;          // wall clock for one terraform run
  std::map<std::string, std::string> vars;  // more -var (ami_id, ec2_endpoint, offline, ...)
  std::map<std::string, std::string> env;   // more environment (credentials, proxies)
  std::optional<PriceTable> prices;
};

class TerraformProvisioner : public Provisioner {
 public:
  // Destroys every agent of one region (terraform destroy); for decommissioning a region.
  virtual void release_region(const std::string& region, std::function<void(Result<void>)> done) = 0;
  // The agents this provisioner believes it runs, as of its last terraform run per region.
  virtual std::vector<std::string> instance_ids() const = 0;
};

// What is wrong with an enrolment token for the l4-agents module (>= 16 characters of
// [A-Za-z0-9._~+/=-]), or nullopt when nothing is.
std::optional<std::string> enrol_token_problem(const std::string& token);

// Checks the configuration (terraform binary, directories, regions, the enrolment token) before
// any apply.
Result<std::unique_ptr<TerraformProvisioner>> make_terraform_provisioner(
    TerraformConfig config, boost::asio::any_io_executor control_plane, ClockPtr clock);

}  // namespace kfleet::provision
