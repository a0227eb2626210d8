// The static fleet: agents enrol themselves, so there is never anything to ask for.
#include "kfleet/provision/provisioner.hpp"

namespace kfleet::provision {

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::ok: return "ok";
    case Outcome::stockout: return "stockout";
    case Outcome::unsupported: return "unsupported";
    case Outcome::quota: return "quota";
    case Outcome::fatal: return "fatal";
    case Outcome::transient: return "transient";
  }
  return "fatal";
}

namespace {

class StaticProvisioner final : public Provisioner {
 public:
  std::string name() const override { return "static"; }
  bool can_grow() const override { return false; }
  int capacity_budget() const override { return 0; }
  std::vector<std::string> regions() const override { return {}; }
  std::vector<std::string> gpu_classes() const override { return {}; }

  // The scheduler never asks a fleet that cannot grow; answering keeps a stray call harmless.
  void request(const CapacityRequest& r, std::function<void(CapacityResult)> done) override {
    done(CapacityResult{Outcome::fatal,
                        "the static fleet cannot grow: start kfleet-agent on a " + r.gpu +
                            " host in " + r.region + " so that it enrols",
                        {},
                        0});
  }
  void release(const std::string& instance_id, std::function<void(Result<void>)> done) override {
    done(make_error(Errc::not_found, "the static fleet started no instance '" + instance_id +
                                         "': stop its agent on the host instead"));
  }
};

}  // namespace

ProvisionerPtr make_static_provisioner() { return std::make_unique<StaticProvisioner>(); }

}  // namespace kfleet::provision
