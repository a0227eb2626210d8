#pragma once
// The Compute Engine provisioner: one L4 agent per instances.insert in one zone, over the REST
// API v1 (libcurl, no SDK). It polls zoneOperations.get until the operation is DONE, turns
// error.errors[].code into a zone block, a region block (quota), a stop (auth) or a retry
// (throttling), and deletes instances that stay idle or never enrol. Calls run on worker
// threads; completions are posted to the control-plane executor.
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <nlohmann/json.hpp>

#include "kfleet/common/clock.hpp"
#include "kfleet/provision/provisioner.hpp"

namespace kfleet::provision {

struct AgentPackage {
  std::string url;     // http(s)
  std::string sha256;  // 64 lower-case hex digits
};

struct GceConfig {
  std::string project;
  // The zone table, in the order a job that names only a region tries them
  // ("us-central1" = us-central1-a, us-central1-b, ... as listed here).
  std::vector<std::string> zones;
  std::string machine_type = "g2-standard-4";  // one L4
  std::string gpu_class = "L4";
  std::string arch = "sm_89";
  std::string accelerator_type;                // "" for G2 (the GPU comes with the type); n1: nvidia-tesla-t4
  int accelerator_count = 1;
  std::string image_project = "deeplearning-platform-release";
  std::string image_family = "common-cu124-ubuntu-2204";  // an image with the NVIDIA driver
  int boot_disk_gb = 100;
  std::string boot_disk_type = "pd-balanced";
  std::string network = "global/networks/default";
  std::string subnetwork;                      // "regions/<r>/subnetworks/<s>"; "" = the network's
  bool external_ip = true;                     // agents reach kfleetd over the internet
  std::string service_account_email;           // attached to agents; "" = none
  std::string name_prefix = "kfleet";
  std::string server_url;                      // what agents enrol with
  std::string enrol_token;                     // lands in the startup-script metadata
  // Per-instance enrolment: when set, each instance's startup script carries an enrolment token
  // of its own instead of the fleet's, minted for it by kfleetd (bound to the instance's name,
  // one use per GPU, expiring soon after the enrolment deadline). Called with the instance's
  // name and GPU count on the thread that calls request() (kfleetd's control plane), before
  // any call to Compute Engine; it returns the token's secret. kfleetd sets it unless the
  // config says "per_instance_enrolment": false.
  std::function<Result<std::string>(const std::string& instance_name, int uses)> mint_enrol_token;
  bool per_instance_enrolment = true;
  std::string server_ca_pem;                   // CA of kfleetd's certificate: /etc/kfleet/ca.pem
  // The agent's Debian packages (kfleet-agent and kfleet-kernels, as cpack builds them), each
  // downloaded by the startup script and checked against its SHA-256 before apt installs them;
  // empty: they are baked into the image.
  std::vector<AgentPackage> agent_packages;
  // pip packages of the venv /opt/kfleet-python the agents record Triton and torch kernels with
  // (KFLEET_PYTHON; kernels/harness/PYTHON.md); empty: no venv, the agents run CUDA jobs only.
  std::vector<std::string> python_packages = {"torch", "triton", "ninja"};
  std::string owner;                           // labels: who pays
  std::string cost_center;
  std::map<std::string, std::string> labels;   // more labels (ownership labels win)
  int capacity_budget = 4;                     // instances this provisioner may hold at once
  // Auth: a service-account key file, or the metadata server when kfleetd runs on GCE.
  std::string credentials_file;                // "" = metadata server
  std::string token_url;                       // "" = the key's token_uri / the metadata server
  std::string api_endpoint = "https://compute.googleapis.com/compute/v1";
  std::chrono::milliseconds poll_interval{2000};
  std::chrono::milliseconds operation_timeout{300000};
  int http_attempts = 4;                       // 429 / rateLimitExceeded / 5xx: retried this often
  std::chrono::milliseconds retry_base{1000};  // doubles per retry
  std::map<std::string, double> prices;        // machine type -> USD per hour
};

// Reads the JSON config (see docs/examples/gce.json). Errors name the key to fix.
Result<GceConfig> gce_config_from_json(const nlohmann::json& doc);
Result<GceConfig> load_gce_config(const std::filesystem::path& file);
// What kfleetd cannot run with (zones, labels, token, URL), or nullopt.
std::optional<std::string> gce_config_problem(const GceConfig& c);

// How many GPUs (so agents, so slots) one instance of the configured machine type brings:
// g2-standard-24/48/96 carry 2/4/8 L4s; otherwise accelerator_count (at least 1).
int gce_gpus_per_instance(const GceConfig& c);
// The startup-script metadata for an instance in `zone`: writes /etc/kfleet/agent.env, installs
// kfleet-agent (when a download URL is set) and the terraform fleet's per-GPU unit template, and
// starts one agent per GPU (kfleet-agent@0 .. @N-1, N = gce_gpus_per_instance).
// `enrol_token` is the instance's own (per-instance enrolment); "" = the fleet's (c.enrol_token).
std::string gce_startup_script(const GceConfig& c, const std::string& zone,
                               const std::string& enrol_token = "");
// The instances.insert body.
nlohmann::json gce_instance_body(const GceConfig& c, const std::string& zone, const std::string& name,
                                 std::int64_t job_id, const std::string& enrol_token = "");

class GceProvisioner : public Provisioner {
 public:
  // Instances it started and has not deleted: name -> zone.
  virtual std::map<std::string, std::string> instances() const = 0;
};

// Checks the configuration and the credentials file before any request. A config it cannot
// run is an error here; kfleetd turns it into a provisioner that answers `fatal` with the reason.
Result<std::unique_ptr<GceProvisioner>> make_gce_provisioner(GceConfig config,
                                                             boost::asio::any_io_executor control_plane,
                                                             ClockPtr clock);
// For kfleetd: never fails; a bad config yields a provisioner that says why on every request.
ProvisionerPtr make_gce_provisioner_or_explain(GceConfig config, boost::asio::any_io_executor control_plane);

}  // namespace kfleet::provision
