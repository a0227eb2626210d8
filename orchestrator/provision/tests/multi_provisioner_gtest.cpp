// make_multi_provisioner: requests go to the provisioner that lists the zone or region, releases
// to the one that started the instance, and events name the routed provider.
#include <gtest/gtest.h>

#include "kfleet/provision/multi_provisioner.hpp"

namespace kfleet::provision {
namespace {

// Records what it was asked and grants one instance named <name>-<n>.
class Recorder final : public Provisioner {
 public:
  Recorder(std::string name, std::vector<std::string> regions, std::vector<std::string>* log)
      : name_(std::move(name)), regions_(std::move(regions)), log_(log) {}
  std::string name() const override { return name_; }
  bool can_grow() const override { return true; }
  int capacity_budget() const override { return 2; }
  std::vector<std::string> regions() const override { return regions_; }
  std::vector<std::string> gpu_classes() const override { return {"L4"}; }
  void request(const CapacityRequest& r, std::function<void(CapacityResult)> done) override {
    log_->push_back(name_ + " request " + r.region);
    done(CapacityResult{Outcome::ok, "", {name_ + "-" + std::to_string(++n_)}, 0, {}});
  }
  void release(const std::string& id, std::function<void(Result<void>)> done) override {
    log_->push_back(name_ + " release " + id);
    if (id.rfind(name_ + "-", 0) != 0) return done(make_error(Errc::not_found, name_ + " does not know " + id));
    done(ok_result());
  }
  std::optional<double> usd_per_hour(const std::string& id) const override {
    if (id.rfind(name_ + "-", 0) != 0) return std::nullopt;
    return name_ == "gce" ? 0.7068 : 0.8048;
  }

 private:
  std::string name_;
  std::vector<std::string> regions_;
  std::vector<std::string>* log_;
  int n_ = 0;
};

TEST(MultiProvisioner, RoutesByZoneAndRegionAndReleasesToTheOwner) {
  std::vector<std::string> log;
  std::vector<ProvisionerPtr> m;
  m.push_back(std::make_unique<Recorder>("gce", std::vector<std::string>{"us-central1-a", "us-west1-b"}, &log));
  m.push_back(std::make_unique<Recorder>("terraform", std::vector<std::string>{"us-east-1", "us-west-2"}, &log));
  auto multi = make_multi_provisioner(std::move(m));
  EXPECT_EQ(multi->name(), "multi");
  EXPECT_EQ(multi->capacity_budget(), 4);
  EXPECT_EQ(multi->regions(), (std::vector<std::string>{"us-central1-a", "us-west1-b", "us-east-1", "us-west-2"}));
  EXPECT_EQ(multi->provider_for("us-west1-b"), "gce");
  EXPECT_EQ(multi->provider_for("us-east-1a"), "terraform");  // an AWS zone of a listed region

  std::vector<CapacityResult> got;
  auto keep = [&](CapacityResult r) { got.push_back(std::move(r)); };
  multi->request({1, "us-west1-b", "L4"}, keep);
  multi->request({2, "us-east-1", "L4"}, keep);
  multi->request({3, "us-central1", "L4"}, keep);  // a GCP region whose zone gce lists
  multi->request({4, "eu-north-1", "L4"}, keep);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[3].outcome, Outcome::unsupported);
  EXPECT_NE(got[3].message.find("eu-north-1"), std::string::npos);
  EXPECT_EQ(log, (std::vector<std::string>{"gce request us-west1-b", "terraform request us-east-1",
                                           "gce request us-central1"}));
  EXPECT_EQ(multi->usd_per_hour("gce-1"), 0.7068);
  EXPECT_EQ(multi->usd_per_hour("terraform-1"), 0.8048);

  log.clear();
  std::vector<bool> released;
  multi->release("terraform-1", [&](Result<void> r) { released.push_back(r.ok()); });
  // Not started by this process (a restart): each member is asked until one knows it.
  multi->release("terraform-9", [&](Result<void> r) { released.push_back(r.ok()); });
  multi->release("aws-unknown", [&](Result<void> r) { released.push_back(r.ok()); });
  EXPECT_EQ(released, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(log, (std::vector<std::string>{"terraform release terraform-1", "gce release terraform-9",
                                           "terraform release terraform-9", "gce release aws-unknown",
                                           "terraform release aws-unknown"}));
}

}  // namespace
}  // namespace kfleet::provision
