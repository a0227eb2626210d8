#pragma once
// A fake cloud with real state: per-region capacity, a script of outcomes per region (to stage
// stockouts, quota and auth failures), AWS-like error messages, and real kfleet-agent processes
// (simulated GPU backend) for the capacity it grants. Single-threaded: every call and every
// completion runs on the executor it was given.
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <nlohmann/json.hpp>

#include "kfleet/provision/provisioner.hpp"

namespace kfleet::provision {

struct SimulatedRegion {
  std::string name;                 // "us-east-1"
  std::string gpu = "L4";           // the class its instances carry
  std::string arch = "sm_89";
  int capacity = 1;                 // instances it can hold at once
  std::vector<std::string> script;  // ok|stockout|unsupported|quota|auth|throttle, one per request
  int delay_ms = 0;                 // how long each request takes to answer
  std::string instance_type;        // for messages; "" = derived from gpu (L4 -> g6.xlarge)
};

struct SimulatedCloudConfig {
  std::string agent_binary;         // path to kfleet-agent
  std::string server_url;           // what the agents enrol with
  std::string enrol_token;
  // PEM CA that signed kfleetd's certificate (https): each agent gets it as <dir>/ca.pem (0600)
  // and --ca-file; "" = the agent verifies against the system's CAs.
  std::string server_ca_pem;
  std::string work_root;            // <work_root>/<instance id>/ holds agent.log and the work dir
  int max_instances = 8;            // beyond this, requests fail with VcpuLimitExceeded
  int release_grace_ms = 5000;      // SIGTERM -> SIGKILL
  std::vector<SimulatedRegion> regions;
};

// Checks what a user can get wrong (unknown script words, missing fields, duplicate regions).
Result<SimulatedCloudConfig> simulated_cloud_config_from_json(const nlohmann::json& j);
Result<SimulatedCloudConfig> load_simulated_cloud_config(const std::string& path);

struct SimulatedInstance {
  std::string id;      // "i-0000000000000001"
  std::string name;    // agent name it enrols with
  std::string region;
  int pid = 0;         // also its process group
  bool alive = false;  // the agent process has not exited
};

class SimulatedCloud final : public Provisioner {
 public:
  SimulatedCloud(boost::asio::any_io_executor ex, SimulatedCloudConfig cfg);
  ~SimulatedCloud() override;  // kills what it started
  SimulatedCloud(const SimulatedCloud&) = delete;
  SimulatedCloud& operator=(const SimulatedCloud&) = delete;

  std::string name() const override { return "simulated"; }
  bool can_grow() const override { return true; }
  int capacity_budget() const override;
  std::vector<std::string> regions() const override;
  std::vector<std::string> gpu_classes() const override;
  void request(const CapacityRequest& r, std::function<void(CapacityResult)> done) override;
  void release(const std::string& instance_id, std::function<void(Result<void>)> done) override;
  void shutdown() override;

  // Replaces a region's remaining script (test hooks: stage a stockout now).
  Result<void> set_script(const std::string& region, std::vector<std::string> outcomes);
  // Instances granted and not yet released, in the order they were granted.
  std::vector<SimulatedInstance> instances();
  // Instances held in a region (granted or being started), for capacity checks.
  int used(const std::string& region) const;

  struct State;

 private:
  std::shared_ptr<State> st_;
};

ProvisionerPtr make_simulated_cloud(boost::asio::any_io_executor ex, SimulatedCloudConfig cfg);

}  // namespace kfleet::provision
