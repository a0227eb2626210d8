// kfleetd's provisioners: the slot the control plane holds (filled once kfleetd knows its own
// URL), and the factory that builds what --provisioner names from its config file(s).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "kfleet/provision/provisioner.hpp"

namespace kfleetd {

using kfleet::provision::Provisioner;
using kfleet::provision::ProvisionerPtr;

// The simulated cloud needs kfleetd's own URL, known only once the port is bound; the control
// plane needs a provisioner before that. This slot forwards to whatever is set later.
class ProvisionerSlot final : public Provisioner {
 public:
  void set(ProvisionerPtr p) { inner_ = std::move(p); }
  // What name() says instead of the provisioner's (a standby, which provisions nothing).
  void set_label(std::string label) { label_ = std::move(label); }
  std::string name() const override { return label_.empty() ? inner_->name() : label_; }
  bool can_grow() const override { return inner_->can_grow(); }
  int capacity_budget() const override { return inner_->capacity_budget(); }
  std::vector<std::string> regions() const override { return inner_->regions(); }
  std::vector<std::string> gpu_classes() const override { return inner_->gpu_classes(); }
  std::string provider_for(const std::string& region) const override { return inner_->provider_for(region); }
  void request(const kfleet::provision::CapacityRequest& r,
               std::function<void(kfleet::provision::CapacityResult)> done) override {
    inner_->request(r, std::move(done));
  }
  void release(const std::string& id, std::function<void(kfleet::Result<void>)> done) override {
    inner_->release(id, std::move(done));
  }
  void shutdown() override { inner_->shutdown(); }
  int gpus_per_instance(const std::string& id) const override {
    return inner_->gpus_per_instance(id);
  }
  std::optional<double> usd_per_hour(const std::string& id) const override {
    return inner_->usd_per_hour(id);
  }

 private:
  ProvisionerPtr inner_ = kfleet::provision::make_static_provisioner();
  std::string label_;
};

// What --provisioner and its config options say.
struct ProvisionerChoice {
  std::string kind = "static", sim_cloud_file, tf_config, gce_config, multi_config;
};

// What building a provisioner takes from kfleetd itself: its URL, the enrolment token and
// the agents' CA fill what a config leaves out.
struct ProvisionerEnv {
  boost::asio::io_context& io;
  std::string url, enrol_token, agent_ca_pem, agent_binary, argv0, db;
  bool postgres = false, tls = false;
  // Mints an enrolment token for one instance or slot (named `name`, `uses` enrolments, bound
  // to `instance_id` unless it is ""): a cloud provisioner that can put a secret in one
  // instance's boot gives each its own. Unset: none.
  std::function<kfleet::Result<std::string>(const std::string& name, int uses,
                                            const std::string& instance_id)>
      mint_enrol_token;
};

// Builds one provisioner of a kind from its config (inline JSON, or else the file). Errors are
// printed and give nullptr.
ProvisionerPtr build_provisioner(const ProvisionerEnv& env, const std::string& kind,
                                 const nlohmann::json& inline_cfg, const std::string& file);

// Puts the provisioner the choice names (with its config) into the slot; the static one is
// already there. Prints why and returns false on a bad config.
bool configure_provisioner(const ProvisionerChoice& choice, const ProvisionerEnv& env,
                           ProvisionerSlot& slot);

}  // namespace kfleetd
