// Issue 11's must-show through kfleetd itself: the control plane, scheduler and HTTP API in
// process, the gce provisioner signing its JWT with a key made by the openssl CLI, and a fake
// Compute Engine + token endpoint on loopback answering zone by zone. Seed 001's zone list with
// us-central1-a stocked out lands in southamerica-east1-c; with every zone out the job waits
// with the reason and runs once a block expires; quota and auth failures are on the job; idle
// and never-enrolled instances are deleted. Every wait reads what the API returns, and each
// test picks block lengths that outlast its own checks.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "fake_gce.hpp"
#include "kfleet/provision_gce/gce_provisioner.hpp"
#include "kfleetd_in_process.hpp"

namespace kfleet::provision {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::FakeGce;
using testing::wait_until;
using testing::ZoneBehaviour;

constexpr const char* kUser = "gce-e2e-user-0123456789";
constexpr const char* kEnrol = "gce-e2e-enrol-0123456789";
const std::vector<std::string> kSeedZones = {"us-central1-a", "southamerica-east1-c", "us-west1-b", "us-east4-a",
                                             "europe-west4-a"};

struct Timing {
  TimeMs stockout_base_ms = 120'000;  // long unless a test wants a block to expire
  TimeMs idle_ttl_ms = 0;
  TimeMs enrol_deadline_ms = 600'000;
};

class KfleetdWithGce : public testing::KfleetdInProcess {
 protected:
  void start(Timing t) {
    dir_ = fs::temp_directory_path() / ("kfleet-gce-e2e-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const std::string pem = (dir_ / "key.pem").string();
    ASSERT_EQ(std::system(("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out " + pem +
                           " 2>/dev/null").c_str()),
              0)
        << "the openssl CLI could not make an RSA key";
    std::ifstream in(pem);
    std::ostringstream key;
    key << in.rdbuf();
    std::ofstream(dir_ / "sa.json") << json{{"type", "service_account"}, {"project_id", "kfleet-e2e"},
                                            {"private_key_id", "k1"}, {"private_key", key.str()},
                                            {"client_email", "kfleetd@kfleet-e2e.iam.gserviceaccount.com"},
                                            {"token_uri", "https://oauth2.googleapis.com/token"}}
                                           .dump();

    // The config goes through the same JSON reader kfleetd uses.
    json cfg_json = {{"project", "kfleet-e2e"},
                     {"zones", {"us-central1-a", "us-central1-b", "southamerica-east1-c", "us-west1-b", "us-east4-a",
                                "europe-west4-a"}},
                     {"owner", "perf-team"},
                     {"cost_center", "cc-1234"},
                     {"server_url", "https://kfleet.test.example"},
                     {"enrol_token", kEnrol},
                     {"credentials_file", (dir_ / "sa.json").string()},
                     {"token_url", fake_.token_url()},
                     {"api_endpoint", fake_.endpoint()},
                     {"poll_interval_ms", 20},
                     {"retry_base_ms", 20},
                     {"capacity_budget", 4},
                     {"prices", {{"g2-standard-4", 0.7068}}}};
    auto gc = gce_config_from_json(cfg_json);
    ASSERT_TRUE(gc.ok()) << gc.error().message;
    auto clock = std::make_shared<SystemClock>();
    auto p = make_gce_provisioner(*gc, executor(), clock);
    ASSERT_TRUE(p.ok()) << p.error().message;
    prov_ = std::move(*p);

    core::Config cfg;
    cfg.user_tokens = {kUser};
    cfg.enrol_token = kEnrol;
    cfg.tick_ms = 50;
    cfg.block_policy.stockout_base_ms = t.stockout_base_ms;  // kfleetd --stockout-cooldown-ms
    cfg.idle_agent_ttl_ms = t.idle_ttl_ms;                    // kfleetd --idle-agent-ttl-s
    cfg.enrol_deadline_ms = t.enrol_deadline_ms;
    serve(*prov_, clock, cfg, (dir_ / "kfleet.db").string());
  }

  void TearDown() override {
    stop_serving();
    if (prov_) prov_->shutdown();
    for (const auto& p : fake_.problems()) ADD_FAILURE() << "fake Compute Engine: " << p;
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  json wait_for_capacity(std::int64_t id, const std::string& outcome,
                         std::chrono::seconds deadline = std::chrono::seconds(60)) {
    return KfleetdInProcess::wait_for_capacity(id, outcome, deadline);
  }
  // An agent as the started instance's startup script would enrol it (named as the instance).
  std::int64_t run_on_new_agent(std::int64_t job_id, const std::string& zone, const std::string& instance) {
    return KfleetdInProcess::run_on_new_agent(job_id, zone, instance, "gce", instance);
  }

  FakeGce fake_;
  fs::path dir_;
  std::unique_ptr<GceProvisioner> prov_;
};

TEST_F(KfleetdWithGce, SeedListWithUsCentral1aStockedOutLandsInSouthamericaEast1cAndTheIdleInstanceIsDeleted) {
  start(Timing{.stockout_base_ms = 120'000, .idle_ttl_ms = 1'500});
  fake_.set_behaviour("us-central1-a", ZoneBehaviour::stockout);
  const std::int64_t id = submit("gce-seed-001", kSeedZones);
  ASSERT_GT(id, 0);
  const json landed = wait_for_capacity(id, "ok");
  ASSERT_FALSE(landed.is_null());
  EXPECT_EQ(landed["data"]["region"], "southamerica-east1-c");
  EXPECT_EQ(landed["data"]["provider"], "gce");
  ASSERT_EQ(landed["data"]["instance_ids"].size(), 1u);
  const std::string instance = landed["data"]["instance_ids"][0];

  const auto capacity = events(id, "capacity");
  ASSERT_EQ(capacity.size(), 2u) << json(capacity).dump();
  EXPECT_EQ(capacity[0]["data"]["region"], "us-central1-a");
  EXPECT_EQ(capacity[0]["data"]["outcome"], "stockout");
  EXPECT_NE(capacity[0]["data"]["message"].get<std::string>().find("ZONE_RESOURCE_POOL_EXHAUSTED"), std::string::npos);
  EXPECT_EQ(capacity[0]["data"]["blocked_region"], "us-central1-a") << "a stockout blocks the zone, not the region";
  EXPECT_EQ(fake_.inserts("us-central1-a"), 1);
  EXPECT_EQ(fake_.inserts("southamerica-east1-c"), 1);
  EXPECT_EQ(fake_.inserts("us-west1-b"), 0);

  // The zone block is in the fleet view (two minutes long: still there when we look).
  const json blk = block_for("us-central1-a");
  ASSERT_FALSE(blk.is_null()) << get("/api/v1/agents").dump();
  EXPECT_EQ(blk["kind"], "stockout");
  EXPECT_EQ(blk["provider"], "gce");
  EXPECT_GT(blk["seconds_left"].get<double>(), 60.0);
  EXPECT_NE(blk["reason"].get<std::string>().find("ZONE_RESOURCE_POOL_EXHAUSTED"), std::string::npos);

  // What reached Compute Engine: the token came from our JWT, the instance is the one asked for.
  bool token_call = false;
  for (const auto& r : fake_.requests())
    if (r.path == "/token") token_call = true;
  EXPECT_TRUE(token_call);
  const auto made = fake_.instances();
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0].name, instance);
  EXPECT_EQ(made[0].zone, "southamerica-east1-c");
  EXPECT_EQ(made[0].body["machineType"], "zones/southamerica-east1-c/machineTypes/g2-standard-4");
  EXPECT_EQ(made[0].body["scheduling"]["onHostMaintenance"], "TERMINATE");
  EXPECT_EQ(made[0].body["labels"]["kfleet-job"], std::to_string(id));
  for (const auto& r : fake_.requests())
    if (r.path.rfind("/compute/v1/", 0) == 0) {
      EXPECT_EQ(r.authorization, "Bearer ya29.fake-1") << r.path;
    }

  // The instance's agent enrols in its zone and runs the job; the zone is on the fleet view.
  const std::int64_t agent_id = run_on_new_agent(id, "southamerica-east1-c", instance);
  ASSERT_GT(agent_id, 0);
  ASSERT_TRUE(wait_until(std::chrono::seconds(10), [&] { return job(id)["state"] == "passed"; })) << job(id).dump();
  json agent;
  const json fleet = get("/api/v1/agents");  // outlives the loop
  for (const auto& a : fleet["agents"])
    if (a["id"] == agent_id) agent = a;
  ASSERT_FALSE(agent.is_null());
  EXPECT_EQ(agent["region"], "southamerica-east1-c");
  EXPECT_EQ(agent["provider"], "gce");
  EXPECT_EQ(agent["instance_id"], instance);
  // Instance-hour cost at the configured g2-standard-4 price.
  const auto cost = events(id, "cost");
  ASSERT_EQ(cost.size(), 1u) << get("/api/v1/jobs/" + std::to_string(id) + "/events").dump();
  EXPECT_DOUBLE_EQ(cost[0]["data"]["usd_per_hour"].get<double>(), 0.7068);
  EXPECT_EQ(cost[0]["data"]["instance_id"], instance);

  // Idle past its TTL: retired, and instances.delete in its zone.
  ASSERT_TRUE(wait_until(std::chrono::seconds(20), [&] {
    for (const auto& n : fake_.deletes())
      if (n == instance) return true;
    return false;
  })) << "no instances.delete for " << instance << "; agents: " << get("/api/v1/agents").dump();
  // Retired agents are history: the default list is the live fleet, state=all shows them.
  const json live = get("/api/v1/agents");  // outlives the loop
  for (const auto& a : live["agents"]) EXPECT_NE(a["id"], agent_id) << a.dump();
  const json after_idle = get("/api/v1/agents?state=all");
  bool seen = false;
  for (const auto& a : after_idle["agents"])
    if (a["id"] == agent_id) {
      seen = true;
      EXPECT_EQ(a["state"], "retired") << a.dump();
    }
  EXPECT_TRUE(seen) << after_idle.dump();
  ASSERT_TRUE(wait_until(std::chrono::seconds(10), [&] { return prov_->instances().empty(); }));
  EXPECT_EQ(fake_.instances()[0].status, "DELETED");
}

TEST_F(KfleetdWithGce, WithEveryZoneOutTheJobWaitsWithTheReasonAndRunsOnceABlockExpires) {
  // Blocks of 4 s +-20%: long enough to see the wait, short enough to see one expire.
  start(Timing{.stockout_base_ms = 4'000});
  for (const auto& z : kSeedZones) fake_.set_behaviour(z, ZoneBehaviour::stockout);
  const std::int64_t id = submit("gce-all-out", kSeedZones);
  ASSERT_GT(id, 0);
  json seen;
  ASSERT_TRUE(wait_until(std::chrono::seconds(20), [&] {
    seen = job(id);
    return seen["state"] == "waiting_capacity" &&
           seen["state_reason"].get<std::string>().find("no capacity in any region") != std::string::npos;
  })) << seen.dump() << "\n" << get("/api/v1/jobs/" + std::to_string(id) + "/events").dump();
  const std::string reason = seen["state_reason"];
  for (const auto& z : kSeedZones) EXPECT_NE(reason.find(z + " blocked (stockout)"), std::string::npos) << reason;
  TimeMs first_expiry = 0;
  for (const auto& e : events(id, "capacity")) {
    EXPECT_EQ(e["data"]["outcome"], "stockout") << e.dump();
    const TimeMs until = e["data"]["blocked_until_ms"];
    if (first_expiry == 0 || until < first_expiry) first_expiry = until;
  }
  ASSERT_GT(first_expiry, 0);
  ASSERT_LT(SystemClock().now_ms(), first_expiry) << "the blocks expired before the test could see the wait";

  // Capacity returns everywhere; the first block to expire lets its zone be tried, and the job runs.
  for (const auto& z : kSeedZones) fake_.set_behaviour(z, ZoneBehaviour::capacity);
  const json landed = wait_for_capacity(id, "ok", std::chrono::seconds(30));
  ASSERT_FALSE(landed.is_null());
  EXPECT_GE(landed["ts_ms"].get<TimeMs>(), first_expiry) << "capacity was asked again before any block ended";
  const std::string zone = landed["data"]["region"];
  run_on_new_agent(id, zone, landed["data"]["instance_ids"][0]);
  ASSERT_TRUE(wait_until(std::chrono::seconds(10), [&] { return job(id)["state"] == "passed"; })) << job(id).dump();
}

TEST_F(KfleetdWithGce, QuotaBlocksTheWholeRegionAndAuthStopsProvisioningBothShownOnTheJob) {
  start(Timing{});
  fake_.set_behaviour("us-central1-a", ZoneBehaviour::quota);
  // A region name stands for its zones in the config's order: us-central1-a, then us-central1-b.
  const std::int64_t q = submit("gce-quota", {"us-central1"});
  ASSERT_GT(q, 0);
  const json refused = wait_for_capacity(q, "quota");
  ASSERT_FALSE(refused.is_null());
  EXPECT_EQ(refused["data"]["region"], "us-central1-a");
  EXPECT_EQ(refused["data"]["blocked_region"], "us-central1");
  json seen;
  ASSERT_TRUE(wait_until(std::chrono::seconds(10), [&] {
    seen = job(q);
    return seen["state_reason"].get<std::string>().find("QUOTA_EXCEEDED") != std::string::npos;
  })) << seen.dump();
  const std::string reason = seen["state_reason"];
  EXPECT_EQ(seen["state"], "waiting_capacity");
  EXPECT_NE(reason.find("Quota 'NVIDIA_L4_GPUS' exceeded"), std::string::npos) << reason;
  EXPECT_NE(reason.find("us-central1-b"), std::string::npos) << "the region's other zone is blocked too: " << reason;
  EXPECT_EQ(fake_.inserts("us-central1-b"), 0);
  const json blk = block_for("us-central1");
  ASSERT_FALSE(blk.is_null()) << get("/api/v1/agents").dump();
  EXPECT_EQ(blk["kind"], "quota");

  fake_.set_behaviour("europe-west4-a", ZoneBehaviour::forbidden);
  const std::int64_t a = submit("gce-auth", {"europe-west4-a"});
  ASSERT_GT(a, 0);
  const json fatal = wait_for_capacity(a, "fatal");
  ASSERT_FALSE(fatal.is_null());
  EXPECT_NE(fatal["data"]["message"].get<std::string>().find("compute.instances.create"), std::string::npos)
      << fatal.dump();
  ASSERT_TRUE(wait_until(std::chrono::seconds(10), [&] {
    return get("/api/v1/agents").value("provisioning_stopped", "").find("compute.instances.create") != std::string::npos;
  })) << get("/api/v1/agents").dump();
  ASSERT_TRUE(wait_until(std::chrono::seconds(10), [&] {
    return job(a)["state_reason"].get<std::string>().find("compute.instances.create") != std::string::npos;
  })) << "the waiting job does not say why provisioning stopped: " << job(a).dump();
  EXPECT_TRUE(fake_.instances().empty());
}

TEST_F(KfleetdWithGce, AnInstanceThatNeverEnrolsIsDeleted) {
  start(Timing{.enrol_deadline_ms = 1'000});
  const std::int64_t id = submit("gce-never", {"us-west1-b"});
  ASSERT_GT(id, 0);
  const json landed = wait_for_capacity(id, "ok");
  ASSERT_FALSE(landed.is_null());
  const std::string instance = landed["data"]["instance_ids"][0];
  ASSERT_TRUE(wait_until(std::chrono::seconds(20), [&] {
    for (const auto& n : fake_.deletes())
      if (n == instance) return true;
    return false;
  })) << "no instances.delete for " << instance;
  bool said = false;
  for (const auto& e : events(id, "capacity"))
    if (e["data"]["outcome"] == "never_enrolled" && e["data"]["instance_ids"][0] == instance) said = true;
  EXPECT_TRUE(said) << get("/api/v1/jobs/" + std::to_string(id) + "/events").dump();
}

}  // namespace
}  // namespace kfleet::provision
