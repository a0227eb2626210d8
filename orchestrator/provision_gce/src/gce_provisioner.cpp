#include "kfleet/provision_gce/gce_provisioner.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "curl_call.hpp"
#include "kfleet/common/log.hpp"
#include "kfleet/provision_gce/gce_auth.hpp"
#include "kfleet/provision_gce/gce_error.hpp"

namespace kfleet::provision {
namespace {

namespace asio = boost::asio;

// Worker threads only wait on HTTP calls and operation polls; a few cover many zones.
constexpr int kWorkerThreads = 4;
constexpr std::chrono::milliseconds kCallTimeout{60000};

bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// What one API call came to: a JSON answer, or a classified failure.
struct Call {
  bool ok = false;
  long status = 0;
  nlohmann::json doc;
  GceFailure failure;
};

class GceProvisionerImpl final : public GceProvisioner {
 public:
  GceProvisionerImpl(GceConfig c, std::unique_ptr<TokenSource> tokens, asio::any_io_executor cp, ClockPtr clock)
      : cfg_(std::move(c)), tokens_(std::move(tokens)), control_plane_(std::move(cp)), clock_(std::move(clock)),
        pool_(kWorkerThreads), rng_(std::random_device{}()) {}
  ~GceProvisionerImpl() override { shutdown(); }

  std::string name() const override { return "gce"; }
  bool can_grow() const override { return true; }
  int capacity_budget() const override { return cfg_.capacity_budget; }
  std::vector<std::string> regions() const override { return cfg_.zones; }
  std::vector<std::string> gpu_classes() const override { return {cfg_.gpu_class}; }
  // L4s per g2 machine type (one agent per GPU): a request for g2-standard-96 brings 8 slots.
  int gpus_per_instance(const std::string& /*instance_id*/) const override { return gce_gpus_per_instance(cfg_); }
  std::optional<double> usd_per_hour(const std::string& instance_id) const override {
    {
      std::lock_guard lock(mutex_);
      if (!instances_.count(instance_id) && zone_from_name(instance_id).empty()) return std::nullopt;
    }
    auto it = cfg_.prices.find(cfg_.machine_type);
    if (it == cfg_.prices.end()) return std::nullopt;
    return it->second;
  }
  std::map<std::string, std::string> instances() const override {
    std::lock_guard lock(mutex_);
    return instances_;
  }

  void request(const CapacityRequest& r, std::function<void(CapacityResult)> done) override {
    if (std::find(cfg_.zones.begin(), cfg_.zones.end(), r.region) == cfg_.zones.end() ||
        !iequals(r.gpu, cfg_.gpu_class)) {
      finish(std::move(done), CapacityResult{Outcome::unsupported,
                                             "the gce provisioner offers " + cfg_.gpu_class + " (" + cfg_.machine_type +
                                                 ") in zones " + joined_zones() + ", not " + r.gpu + " in " + r.region,
                                             {}, 0, {}});
      return;
    }
    std::string name;
    {
      std::lock_guard lock(mutex_);
      if (static_cast<int>(instances_.size()) + starting_ >= cfg_.capacity_budget) {
        finish(std::move(done),
               CapacityResult{Outcome::quota,
                              "kfleet's own budget of " + std::to_string(cfg_.capacity_budget) +
                                  " gce instances is in use; raise capacity_budget or release agents",
                              {}, 0, {}});
        return;
      }
      ++starting_;
      name = cfg_.name_prefix + "-" + r.region + "-j" + std::to_string(r.job_id) + "-" + suffix();
    }
    // Its own enrolment token, minted here on the caller's (the control plane's) thread.
    std::string token;
    if (cfg_.mint_enrol_token) {
      auto t = cfg_.mint_enrol_token(name, gce_gpus_per_instance(cfg_));
      if (!t) {
        {
          std::lock_guard lock(mutex_);
          --starting_;
        }
        finish(std::move(done),
               CapacityResult{Outcome::fatal,
                              "cannot mint an enrolment token for instance " + name + ": " +
                                  t.error().message,
                              {}, 0, {}});
        return;
      }
      token = std::move(*t);
    }
    asio::post(pool_, [this, r, name, token, done = std::move(done)]() mutable {
      CapacityResult res = insert(r, name, token);
      {
        std::lock_guard lock(mutex_);
        --starting_;
      }
      finish(std::move(done), std::move(res));
    });
  }

  void release(const std::string& instance_id, std::function<void(Result<void>)> done) override {
    std::string zone;
    {
      std::lock_guard lock(mutex_);
      auto it = instances_.find(instance_id);
      zone = it != instances_.end() ? it->second : zone_from_name(instance_id);
    }
    if (zone.empty()) {
      finish(std::move(done), Result<void>(make_error(Errc::not_found, "the gce provisioner started no instance '" +
                                                                             instance_id + "'")));
      return;
    }
    asio::post(pool_, [this, instance_id, zone, done = std::move(done)]() mutable {
      finish(std::move(done), remove(instance_id, zone));
    });
  }

  void shutdown() override {
    // Instances outlive kfleetd on purpose; only the calls under way are waited for.
    if (!stopped_.exchange(true)) pool_.join();
  }

 private:
  template <class Done, class Value>
  void finish(Done done, Value value) {
    asio::post(control_plane_, [done = std::move(done), value = std::move(value)]() mutable { done(std::move(value)); });
  }

  std::string joined_zones() const {
    std::string s;
    for (const auto& z : cfg_.zones) s += (s.empty() ? "" : ", ") + z;
    return s;
  }

  // Names are <prefix>-<zone>-j<job>-<suffix>, so a release after a restart still finds the zone.
  std::string zone_from_name(const std::string& name) const {
    for (const auto& z : cfg_.zones)
      if (name.rfind(cfg_.name_prefix + "-" + z + "-j", 0) == 0) return z;
    return "";
  }

  std::string suffix() {  // under mutex_
    static const char* abc = "0123456789abcdefghijklmnopqrstuvwxyz";
    std::string s;
    for (int i = 0; i < 6; ++i) s += abc[rng_() % 36];
    return s;
  }

  std::string request_id() {
    std::lock_guard lock(mutex_);
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < 32; ++i) {
      if (i == 8 || i == 12 || i == 16 || i == 20) s += '-';
      s += hex[rng_() % 16];
    }
    s[14] = '4';
    return s;
  }

  // Sleeps in short steps so that shutdown is not held up by a long poll interval.
  bool pause(std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
      if (stopped_) return false;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          until - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
    }
    return !stopped_;
  }

  std::string zone_url(const std::string& zone) const {
    return cfg_.api_endpoint + "/projects/" + cfg_.project + "/zones/" + zone;
  }

  // One API call with the bearer token; retried with backoff while the answer is transient
  // (429, rateLimitExceeded, 5xx, transport); a 401 fetches a fresh token once.
  Call api(const std::string& method, const std::string& url, const std::string& body) {
    Call c;
    bool renewed = false, skip_pause = false;
    for (int attempt = 0; attempt < cfg_.http_attempts; ++attempt) {
      if (attempt > 0 && !std::exchange(skip_pause, false)) {
        std::uniform_real_distribution<double> jitter(0.8, 1.2);
        double factor;
        {
          std::lock_guard lock(mutex_);
          factor = jitter(rng_);
        }
        const auto wait = std::chrono::milliseconds(
            static_cast<std::int64_t>(static_cast<double>(cfg_.retry_base.count()) * (1 << std::min(attempt - 1, 6)) * factor));
        if (!pause(wait)) break;
      }
      TokenError why;
      auto token = tokens_->token(&why);
      if (!token) {
        c.failure = GceFailure{why.outcome, "auth", why.message, false};
        if (why.outcome == Outcome::transient) continue;
        return c;
      }
      std::vector<std::string> headers = {"Authorization: Bearer " + *token, "Accept: application/json"};
      if (!body.empty()) headers.push_back("Content-Type: application/json");
      auto a = gce::call(method, url, headers, body, kCallTimeout);
      if (!a) {
        c.failure = GceFailure{Outcome::transient, "transport", a.error().message, false};
        continue;
      }
      c.status = a->status;
      if (a->status >= 200 && a->status < 300) {
        c.doc = nlohmann::json::parse(a->body, nullptr, false);
        if (c.doc.is_discarded()) {
          c.failure = GceFailure{Outcome::transient, "bad body", method + " " + url + " answered " +
                                                                     std::to_string(a->status) + " without JSON", false};
          continue;
        }
        c.ok = true;
        return c;
      }
      c.failure = classify_gce_http(a->status, a->body);
      log::warn("gce", method, " ", url, " -> ", a->status, ": ", c.failure.message);
      if (a->status == 401 && !renewed) {
        tokens_->invalidate();
        renewed = true;
        skip_pause = true;  // a renewed token is not a retry of a throttled call
        --attempt;
        continue;
      }
      if (c.failure.outcome != Outcome::transient) return c;
    }
    return c;
  }

  // zoneOperations.get until DONE (or the operation budget runs out).
  Call wait_done(const std::string& zone, nlohmann::json op) {
    const auto until = std::chrono::steady_clock::now() + cfg_.operation_timeout;
    const std::string name = json_string_at(op, "name");
    while (json_string_at(op, "status") != "DONE") {
      if (name.empty()) return Call{false, 0, op, GceFailure{Outcome::fatal, "operation", "an operation without a name", false}};
      if (std::chrono::steady_clock::now() >= until || !pause(cfg_.poll_interval)) {
        return Call{false, 0, op,
                    GceFailure{Outcome::transient, "operation timeout",
                               "operation " + name + " still " + json_string_at(op, "status", "?") + " after " +
                                   std::to_string(cfg_.operation_timeout.count() / 1000) + " s",
                               false}};
      }
      Call c = api("GET", zone_url(zone) + "/operations/" + name, "");
      if (!c.ok) return c;
      op = c.doc;
    }
    return Call{true, 200, op, {}};
  }

  CapacityResult insert(const CapacityRequest& r, const std::string& name, const std::string& token) {
    const TimeMs t0 = clock_->now_ms();
    auto seconds = [&] { return static_cast<double>(clock_->now_ms() - t0) / 1000.0; };
    auto failed = [&](const GceFailure& f) {
      CapacityResult res{f.outcome, f.message, {}, seconds(), {}};
      if (f.region_wide) res.block_region = gce_region_of_zone(r.region);
      return res;
    };
    const std::string body = gce_instance_body(cfg_, r.region, name, r.job_id, token).dump();
    Call c = api("POST", zone_url(r.region) + "/instances?requestId=" + request_id(), body);
    if (!c.ok) return failed(c.failure);
    Call done = wait_done(r.region, c.doc);
    if (!done.ok) {
      if (done.failure.code == "operation timeout") {
        // It may still come up: delete it rather than pay for an instance nobody waits for.
        (void)remove(name, r.region);
      }
      return failed(done.failure);
    }
    if (done.doc.contains("error")) return failed(classify_gce_operation(done.doc));
    {
      std::lock_guard lock(mutex_);
      instances_[name] = r.region;
    }
    return CapacityResult{Outcome::ok, "created " + name + " (" + cfg_.machine_type + ") in " + r.region, {name},
                          seconds(), {}};
  }

  Result<void> remove(const std::string& name, const std::string& zone) {
    Call c = api("DELETE", zone_url(zone) + "/instances/" + name + "?requestId=" + request_id(), "");
    if (!c.ok && c.status == 404) {  // already gone
      std::lock_guard lock(mutex_);
      instances_.erase(name);
      return ok_result();
    }
    if (!c.ok) return make_error(Errc::unavailable, "instances.delete " + name + ": " + c.failure.message);
    Call done = wait_done(zone, c.doc);
    if (!done.ok) return make_error(Errc::unavailable, "instances.delete " + name + ": " + done.failure.message);
    if (done.doc.contains("error")) {
      auto f = classify_gce_operation(done.doc);
      return make_error(Errc::internal, "instances.delete " + name + " failed: " + f.message);
    }
    std::lock_guard lock(mutex_);
    instances_.erase(name);
    return ok_result();
  }

  GceConfig cfg_;
  std::unique_ptr<TokenSource> tokens_;
  asio::any_io_executor control_plane_;
  ClockPtr clock_;
  asio::thread_pool pool_;
  mutable std::mutex mutex_;
  std::map<std::string, std::string> instances_;  // name -> zone; under mutex_
  int starting_ = 0;                              // inserts under way; under mutex_
  std::mt19937_64 rng_;                           // under mutex_
  std::atomic<bool> stopped_{false};
};

// Stands in when the configuration cannot run: provisioning is reported, not silently absent.
class MisconfiguredGce final : public Provisioner {
 public:
  MisconfiguredGce(asio::any_io_executor ex, std::vector<std::string> zones, std::string gpu, std::string why)
      : ex_(std::move(ex)), zones_(std::move(zones)), gpu_(std::move(gpu)), why_(std::move(why)) {}
  std::string name() const override { return "gce"; }
  bool can_grow() const override { return true; }  // so that jobs ask, and are told why not
  int capacity_budget() const override { return 1; }
  std::vector<std::string> regions() const override { return zones_; }
  std::vector<std::string> gpu_classes() const override { return {gpu_}; }
  void request(const CapacityRequest&, std::function<void(CapacityResult)> done) override {
    asio::post(ex_, [done = std::move(done), why = why_] { done(CapacityResult{Outcome::fatal, why, {}, 0, {}}); });
  }
  void release(const std::string&, std::function<void(Result<void>)> done) override {
    asio::post(ex_, [done = std::move(done), why = why_] { done(Result<void>(make_error(Errc::unavailable, why))); });
  }

 private:
  asio::any_io_executor ex_;
  std::vector<std::string> zones_;
  std::string gpu_, why_;
};

}  // namespace

Result<std::unique_ptr<GceProvisioner>> make_gce_provisioner(GceConfig config, asio::any_io_executor control_plane,
                                                             ClockPtr clock) {
  if (auto bad = gce_config_problem(config)) return make_error(Errc::invalid_argument, "gce provisioner: " + *bad);
  if (config.server_url.empty() || (config.enrol_token.empty() && !config.mint_enrol_token))
    return make_error(Errc::invalid_argument, "gce provisioner: needs server_url and enrol_token (kfleetd --enrol-token-file or KFLEET_ENROL_TOKEN)");
  if (!clock) return make_error(Errc::invalid_argument, "gce provisioner needs a clock");
  std::unique_ptr<TokenSource> tokens;
  if (!config.credentials_file.empty()) {
    auto key = load_service_account_key(config.credentials_file);
    if (!key) return make_error(key.error().code, "gce provisioner: " + key.error().message);
    tokens = make_service_account_token_source(std::move(*key), config.token_url, clock);
  } else {
    tokens = make_metadata_token_source(config.token_url, clock);
  }
  return std::unique_ptr<GceProvisioner>(
      new GceProvisionerImpl(std::move(config), std::move(tokens), std::move(control_plane), std::move(clock)));
}

ProvisionerPtr make_gce_provisioner_or_explain(GceConfig config, asio::any_io_executor control_plane) {
  auto zones = config.zones;
  auto gpu = config.gpu_class;
  auto p = make_gce_provisioner(std::move(config), control_plane, std::make_shared<SystemClock>());
  if (!p) {
    log::error("gce", p.error().message);
    return std::make_unique<MisconfiguredGce>(control_plane, zones, gpu, p.error().message);
  }
  return std::move(p.value());
}

}  // namespace kfleet::provision
