#include "kfleet/provision/multi_provisioner.hpp"

#include <algorithm>
#include <map>
#include <memory>

namespace kfleet::provision {
namespace {

bool is_zone_of(const std::string& region, const std::string& zone) {
  if (zone.size() <= region.size() || zone.compare(0, region.size(), region) != 0) return false;
  const std::string rest = zone.substr(region.size());
  if (rest.size() == 1) return rest[0] >= 'a' && rest[0] <= 'z';
  return rest.size() == 2 && rest[0] == '-' && rest[1] >= 'a' && rest[1] <= 'z';
}

class MultiProvisioner final : public Provisioner {
 public:
  explicit MultiProvisioner(std::vector<ProvisionerPtr> m) : members_(std::move(m)) {}

  std::string name() const override { return "multi"; }
  bool can_grow() const override {
    return std::any_of(members_.begin(), members_.end(), [](const auto& p) { return p->can_grow(); });
  }
  int capacity_budget() const override {
    int n = 0;
    for (const auto& p : members_) n += p->capacity_budget();
    return n;
  }
  std::vector<std::string> regions() const override {
    std::vector<std::string> out;
    for (const auto& p : members_)
      for (const auto& r : p->regions())
        if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
    return out;
  }
  std::vector<std::string> gpu_classes() const override {
    std::vector<std::string> out;
    for (const auto& p : members_)
      for (const auto& g : p->gpu_classes())
        if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
    return out;
  }
  std::string provider_for(const std::string& region) const override {
    const Provisioner* p = route(region);
    return p ? p->provider_for(region) : name();
  }

  void request(const CapacityRequest& r, std::function<void(CapacityResult)> done) override {
    Provisioner* p = route(r.region);
    if (!p) {
      std::string names;
      for (const auto& m : members_) names += (names.empty() ? "" : ", ") + m->name();
      done(CapacityResult{Outcome::unsupported, "no provisioner (" + names + ") lists " + r.region, {}, 0, {}});
      return;
    }
    p->request(r, [this, p, done = std::move(done)](CapacityResult res) {
      for (const auto& id : res.instance_ids) owner_[id] = p;  // control-plane thread
      done(std::move(res));
    });
  }

  void release(const std::string& instance_id, std::function<void(Result<void>)> done) override {
    auto it = owner_.find(instance_id);
    if (it != owner_.end()) {
      Provisioner* p = it->second;
      p->release(instance_id, [this, instance_id, done = std::move(done)](Result<void> r) {
        if (r) owner_.erase(instance_id);
        done(std::move(r));
      });
      return;
    }
    // Started before a restart: each member that can grow is asked until one knows it.
    try_release(instance_id, 0, std::move(done), "");
  }

  void shutdown() override {
    for (auto& p : members_) p->shutdown();
  }
  int gpus_per_instance(const std::string& instance_id) const override {
    if (auto it = owner_.find(instance_id); it != owner_.end())
      return it->second->gpus_per_instance(instance_id);
    return members_.empty() ? 1 : members_.front()->gpus_per_instance(instance_id);
  }
  std::optional<double> usd_per_hour(const std::string& instance_id) const override {
    if (auto it = owner_.find(instance_id); it != owner_.end()) return it->second->usd_per_hour(instance_id);
    for (const auto& p : members_)
      if (auto v = p->usd_per_hour(instance_id)) return v;
    return std::nullopt;
  }

 private:
  Provisioner* route(const std::string& region) const {
    for (const auto& p : members_)
      for (const auto& r : p->regions())
        if (r == region) return p.get();
    for (const auto& p : members_)
      for (const auto& r : p->regions())
        if (is_zone_of(r, region) || is_zone_of(region, r)) return p.get();
    return nullptr;
  }

  void try_release(const std::string& id, std::size_t i, std::function<void(Result<void>)> done, std::string why) {
    while (i < members_.size() && !members_[i]->can_grow()) ++i;
    if (i >= members_.size()) {
      done(make_error(Errc::not_found, "no provisioner knows instance " + id + (why.empty() ? "" : ": " + why)));
      return;
    }
    members_[i]->release(id, [this, id, i, done = std::move(done), why](Result<void> r) mutable {
      if (r) return done(std::move(r));
      try_release(id, i + 1, std::move(done), why + (why.empty() ? "" : "; ") + r.error().message);
    });
  }

  std::vector<ProvisionerPtr> members_;
  std::map<std::string, Provisioner*> owner_;  // instance id -> who started it (control-plane thread)
};

}  // namespace

ProvisionerPtr make_multi_provisioner(std::vector<ProvisionerPtr> members) {
  return std::make_unique<MultiProvisioner>(std::move(members));
}

}  // namespace kfleet::provision
