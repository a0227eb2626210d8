#include "kfleet/provision_terraform/terraform_provisioner.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <atomic>
#include <mutex>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include "kfleet/common/log.hpp"
#include "kfleet/common/pem.hpp"
#include "kfleet/provision_terraform/aws_error.hpp"
#include "kfleet/provision_terraform/terraform_output.hpp"
#include "region_workdir.hpp"

namespace kfleet::provision {
namespace {

namespace asio = boost::asio;

// Worker threads only wait on terraform children; a few cover a fleet of regions.
constexpr int kWorkerThreads = 4;

struct Region {
  std::unique_ptr<RegionWorkdir> workdir;
  asio::strand<asio::thread_pool::executor_type> strand;  // one terraform run at a time here
  std::map<std::string, AgentInstance> instances;         // as of the last run; under mutex_
  bool known = false;  // instances reflect the state file (strand only)
};

class TerraformProvisionerImpl final : public TerraformProvisioner {
 public:
  TerraformProvisionerImpl(TerraformConfig config, asio::any_io_executor control_plane, ClockPtr clock)
      : config_(std::move(config)), control_plane_(std::move(control_plane)), clock_(std::move(clock)),
        pool_(kWorkerThreads) {
    for (const auto& key : config_.regions) {
      regions_.emplace(key, Region{std::make_unique<RegionWorkdir>(config_, key),
                                   asio::make_strand(pool_.get_executor()), {}, false});
    }
  }
  ~TerraformProvisionerImpl() override { shutdown(); }

  std::string name() const override { return "terraform"; }
  bool can_grow() const override { return true; }
  int capacity_budget() const override { return config_.capacity_budget; }
  std::optional<double> usd_per_hour(const std::string& /*instance_id*/) const override {
    // Every agent this provisioner starts is of the configured instance type.
    if (!config_.prices) return std::nullopt;
    return config_.prices->usd_per_hour(config_.instance_type);
  }
  int gpus_per_instance(const std::string& /*instance_id*/) const override {
    return config_.prices ? config_.prices->gpus_per_instance(config_.instance_type)
                          : provision::known_gpus_per_instance(config_.instance_type);
  }
  std::vector<std::string> regions() const override { return config_.regions; }
  std::vector<std::string> gpu_classes() const override { return {"L4"}; }

  void request(const CapacityRequest& r, std::function<void(CapacityResult)> done) override {
    auto it = regions_.find(r.region);
    if (it == regions_.end() || r.gpu != "L4") {
      finish(std::move(done), CapacityResult{Outcome::unsupported,
                                             "the terraform provisioner offers L4 in " + joined_regions() +
                                                 ", not " + r.gpu + " in " + r.region,
                                             {}, 0});
      return;
    }
    if (static_cast<int>(instance_ids().size()) >= config_.capacity_budget) {
      finish(std::move(done), CapacityResult{Outcome::quota,
                                             "kfleet's own budget of " + std::to_string(config_.capacity_budget) +
                                                 " terraform agents is in use; raise capacity_budget or release agents",
                                             {}, 0});
      return;
    }
    std::string slot = "j" + std::to_string(r.job_id) + "-" + std::to_string(next_slot_++) + "-" +
                       std::to_string(clock_->now_ms() % 100000000);
    // The slot's own enrolment token, minted here on the caller's (the control plane's) thread.
    std::map<std::string, std::string> tokens;
    if (config_.mint_enrol_token) {
      auto t = config_.mint_enrol_token(slot, gpus_per_instance(""));
      if (!t) {
        finish(std::move(done), CapacityResult{Outcome::fatal,
                                               "cannot mint an enrolment token for slot " + slot +
                                                   ": " + t.error().message,
                                               {}, 0});
        return;
      }
      tokens[slot] = std::move(*t);
    }
    asio::post(it->second.strand,
               [this, &region = it->second, slot, tokens, done = std::move(done)]() mutable {
                 finish(std::move(done), grow(region, slot, tokens));
               });
  }

  void release(const std::string& instance_id, std::function<void(Result<void>)> done) override {
    Region* holder = nullptr;
    std::string slot;
    {
      std::lock_guard lock(mutex_);
      for (auto& [key, region] : regions_) {
        for (const auto& [s, inst] : region.instances) {
          if (inst.id == instance_id) holder = &region, slot = s;
        }
      }
    }
    if (!holder) {
      finish(std::move(done), Result<void>(make_error(Errc::not_found, "no terraform agent has instance id " + instance_id)));
      return;
    }
    asio::post(holder->strand, [this, holder, slot, done = std::move(done)]() mutable {
      finish(std::move(done), shrink(*holder, slot));
    });
  }

  void release_region(const std::string& key, std::function<void(Result<void>)> done) override {
    auto it = regions_.find(key);
    if (it == regions_.end()) {
      finish(std::move(done), Result<void>(make_error(Errc::not_found, key + " is not one of " + joined_regions())));
      return;
    }
    asio::post(it->second.strand, [this, &region = it->second, done = std::move(done)]() mutable {
      finish(std::move(done), destroy(region));
    });
  }

  std::vector<std::string> instance_ids() const override {
    std::lock_guard lock(mutex_);
    std::vector<std::string> ids;
    for (const auto& [key, region] : regions_) {
      for (const auto& [slot, inst] : region.instances) ids.push_back(inst.id);
    }
    return ids;
  }

  void shutdown() override {
    // Agents outlive kfleetd on purpose; only the in-flight terraform runs are waited for.
    if (!stopped_.exchange(true)) pool_.join();
  }

 private:
  template <class Done, class Value>
  void finish(Done done, Value value) {
    asio::post(control_plane_, [done = std::move(done), value = std::move(value)]() mutable {
      done(std::move(value));
    });
  }

  std::string joined_regions() const {
    std::string s;
    for (const auto& r : config_.regions) s += (s.empty() ? "" : ", ") + r;
    return s;
  }

  // Runs on the region's strand.
  CapacityResult grow(Region& region, const std::string& slot,
                      const std::map<std::string, std::string>& tokens) {
    const TimeMs t0 = clock_->now_ms();
    auto seconds = [&] { return static_cast<double>(clock_->now_ms() - t0) / 1000.0; };
    if (auto p = region.workdir->prepare(); !p) {
      auto f = classify_aws_error(p.error().message);
      return CapacityResult{f.outcome, f.message, {}, seconds()};
    }
    auto before = current(region);
    if (!before) return CapacityResult{Outcome::transient, before.error().message, {}, seconds()};
    std::vector<std::string> slots;
    for (const auto& [s, inst] : *before) slots.push_back(s);
    slots.push_back(slot);

    auto run = region.workdir->apply(slots, tokens);
    if (!run) return CapacityResult{Outcome::fatal, run.error().message, {}, seconds()};
    (void)refresh(region);  // a partly failed apply may still have created or destroyed agents
    if (!run->timed_out && run->exit_code != 0) {
      // A dropped connection lost the cloud's answer, not the request: apply once more (it
      // converges on the same slots, replacing an instance the first left half-read).
      if (auto f = classify_aws_error(error_text_from_json_log(run->output)); f.transport) {
        log::warn("terraform", "slot ", slot, ": the connection to the cloud failed mid-apply (", f.message,
                  "); applying once more");
        run = region.workdir->apply(slots, tokens);
        if (!run) return CapacityResult{Outcome::fatal, run.error().message, {}, seconds()};
        (void)refresh(region);
      }
    }
    if (run->timed_out) {
      return CapacityResult{Outcome::transient,
                            "terraform apply ran past its " + std::to_string(static_cast<int>(config_.apply_budget_s)) +
                                " s budget and was interrupted",
                            {}, seconds()};
    }
    if (run->exit_code != 0) {
      auto f = classify_aws_error(error_text_from_json_log(run->output));
      return CapacityResult{f.outcome, f.message, {}, seconds()};
    }
    std::lock_guard lock(mutex_);
    auto it = region.instances.find(slot);
    if (it == region.instances.end() || it->second.id.empty()) {
      return CapacityResult{Outcome::fatal, "terraform apply succeeded but its state has no instance for slot " + slot,
                            {}, seconds()};
    }
    return CapacityResult{Outcome::ok, "launched " + it->second.id + " (" + it->second.instance_type + ")",
                          {it->second.id}, seconds()};
  }

  Result<void> shrink(Region& region, const std::string& slot) {
    if (auto p = region.workdir->prepare(); !p) return p;
    auto before = current(region);
    if (!before) return before.error();
    std::vector<std::string> slots;
    for (const auto& [s, inst] : *before) {
      if (s != slot) slots.push_back(s);
    }
    if (slots.size() == before->size()) return ok_result();  // already gone
    return outcome_of(region.workdir->apply(slots), region, "apply");
  }

  Result<void> destroy(Region& region) {
    if (auto p = region.workdir->prepare(); !p) return p;
    return outcome_of(region.workdir->destroy(), region, "destroy");
  }

  Result<void> outcome_of(Result<ProcessRun> run, Region& region, const char* what) {
    if (!run) return run.error();
    (void)refresh(region);
    if (run->timed_out) return make_error(Errc::unavailable, std::string("terraform ") + what + " ran past its budget");
    if (run->exit_code != 0) {
      auto f = classify_aws_error(error_text_from_json_log(run->output));
      return make_error(f.outcome == Outcome::transient ? Errc::unavailable : Errc::internal,
                        std::string("terraform ") + what + " failed (" + outcome_name(f.outcome) + "): " + f.message);
    }
    return ok_result();
  }

  // Reads the state file after every run, so what kfleetd believes is what terraform recorded.
  Result<std::map<std::string, AgentInstance>> refresh(Region& region) {
    auto now = region.workdir->instances();
    std::lock_guard lock(mutex_);
    region.known = now.ok();
    if (now) region.instances = *now;
    return now;
  }

  // The slots before a run: the last refresh when it succeeded (each costs a terraform start).
  Result<std::map<std::string, AgentInstance>> current(Region& region) {
    if (!region.known) return refresh(region);
    std::lock_guard lock(mutex_);
    return region.instances;
  }

  TerraformConfig config_;
  asio::any_io_executor control_plane_;
  ClockPtr clock_;
  asio::thread_pool pool_;
  std::map<std::string, Region> regions_;  // keys fixed at construction; values' maps under mutex_
  mutable std::mutex mutex_;
  std::atomic<long> next_slot_{0};
  std::atomic<bool> stopped_{false};
};

}  // namespace

std::optional<std::string> enrol_token_problem(const std::string& token) {
  if (token.size() < 16) return "is " + std::to_string(token.size()) + " characters; it must be at least 16";
  for (char ch : token) {
    const bool ok = std::isalnum(static_cast<unsigned char>(ch)) ||
                    std::string_view("._~+/=-").find(ch) != std::string_view::npos;
    if (!ok) return std::string("holds '") + ch + "', outside [A-Za-z0-9._~+/=-]";
  }
  return std::nullopt;
}

Result<std::unique_ptr<TerraformProvisioner>> make_terraform_provisioner(
    TerraformConfig config, asio::any_io_executor control_plane, ClockPtr clock) {
  if (auto exe = find_executable(config.terraform_binary); !exe) {
    return make_error(Errc::invalid_argument, "terraform provisioner: " + exe.error().message);
  }
  if (!std::filesystem::exists(config.terraform_dir / "fleet" / "main.tf")) {
    return make_error(Errc::invalid_argument, "terraform provisioner: " + config.terraform_dir.string() +
                                                  " does not hold fleet/main.tf; point terraform_dir at kfleet's terraform/");
  }
  if (!config.plugin_dir.empty() && !std::filesystem::is_directory(config.plugin_dir)) {
    return make_error(Errc::invalid_argument, "terraform provisioner: plugin dir " + config.plugin_dir + " does not exist");
  }
  if (config.regions.empty()) return make_error(Errc::invalid_argument, "terraform provisioner: no regions configured");
  if (config.server_url.empty() || (config.enrol_token.empty() && !config.mint_enrol_token) ||
      config.owner.empty() || config.cost_center.empty()) {
    return make_error(Errc::invalid_argument,
                      "terraform provisioner needs server_url, enrol_token, owner and cost_center");
  }
  // The module validates the token only at plan time, after a region was already tried; say it
  // now, in kfleetd's words (terraform/modules/l4-agents/variables.tf has the same rule).
  if (auto bad = config.enrol_token.empty() && config.mint_enrol_token
                     ? std::nullopt
                     : enrol_token_problem(config.enrol_token)) {
    return make_error(Errc::invalid_argument, "terraform provisioner: the enrolment token " + *bad +
                                                  "; cloud agents could not enrol with it. Pass a "
                                                  "--enrol-token-file (or KFLEET_ENROL_TOKEN) of 16 or more characters of "
                                                  "[A-Za-z0-9._~+/=-] (e.g. openssl rand -hex 24)");
  }
  if (!config.server_ca_pem.empty())
    if (auto why = pem_certificates_problem(config.server_ca_pem); !why.empty())
      return make_error(Errc::invalid_argument,
                        "terraform provisioner: server_ca_pem must be the PEM CA certificate that "
                        "signed kfleetd's (kfleetd --agent-ca-file): " + why);
  if (!clock) return make_error(Errc::invalid_argument, "terraform provisioner needs a clock");
  if (auto rc = write_cli_config(config); !rc) return rc.error();
  return std::unique_ptr<TerraformProvisioner>(
      new TerraformProvisionerImpl(std::move(config), std::move(control_plane), std::move(clock)));
}

}  // namespace kfleet::provision
