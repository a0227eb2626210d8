#pragma once
// Where agents come from. `static`: they enrol themselves, nothing to ask for. `simulated`: a
// fake cloud with per-region capacity and scripted stockouts that starts real kfleet-agent
// processes on the simulated GPU backend. `terraform`: applies terraform/ per region.
// Calls come from the control-plane thread; completions are posted back to it.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kfleet/common/clock.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::provision {

enum class Outcome {
  ok,           // capacity is coming: an agent will enrol
  stockout,     // the cloud has none now (InsufficientInstanceCapacity): block with cool-down
  unsupported,  // the zone does not offer the type: block for a long time
  quota,        // vCPU / instance limits: block and tell the user
  fatal,        // auth or configuration: stop provisioning, tell the user
  transient,    // throttling, 5xx: retry soon
};
const char* to_string(Outcome o);

struct CapacityRequest {
  std::int64_t job_id = 0;
  std::string region;
  std::string gpu;  // class, e.g. "L4"
  int gpus = 1;     // GPUs asked for: one instance with this many (gpus_per_instance)
};

struct CapacityResult {
  Outcome outcome = Outcome::fatal;
  std::string message;                    // the cloud's own words, shortened
  std::vector<std::string> instance_ids;  // on ok
  double seconds = 0;                     // how long the attempt took
  // Where the outcome holds when that is wider than the request: a zone's region for a regional
  // quota ("us-central1" after QUOTA_EXCEEDED in us-central1-a). Empty: the requested region.
  std::string block_region;
};

class Provisioner {
 public:
  virtual ~Provisioner() = default;
  virtual std::string name() const = 0;
  virtual bool can_grow() const = 0;
  virtual int capacity_budget() const = 0;
  virtual std::vector<std::string> regions() const = 0;
  virtual std::vector<std::string> gpu_classes() const = 0;
  // Which provider serves a region, for events ("gce", "terraform"); a provisioner that
  // routes among several (multi) names the one it routes to.
  virtual std::string provider_for(const std::string& /*region*/) const { return name(); }
  // Asks for one agent in one region; `done` runs on the control-plane executor.
  virtual void request(const CapacityRequest& r, std::function<void(CapacityResult)> done) = 0;
  // Gives an instance back (idle past its TTL, or never enrolled).
  virtual void release(const std::string& instance_id, std::function<void(Result<void>)> done) = 0;
  // Stops whatever it started (simulated agents) on orchestrator shutdown.
  virtual void shutdown() {}
  // What one of its instances costs per hour, when it has a price for it (a configured price
  // table); kfleetd turns it into an instance-hour cost per job.
  virtual std::optional<double> usd_per_hour(const std::string& /*instance_id*/) const {
    return std::nullopt;
  }
  // GPUs on one of its instances (one agent per GPU): a job pays one GPU's share of an
  // instance-hour, and one capacity request brings that many GPU slots.
  virtual int gpus_per_instance(const std::string& /*instance_id*/) const { return 1; }
};
using ProvisionerPtr = std::unique_ptr<Provisioner>;

// Agents enrol themselves; the fleet never grows on demand.
ProvisionerPtr make_static_provisioner();

}  // namespace kfleet::provision
