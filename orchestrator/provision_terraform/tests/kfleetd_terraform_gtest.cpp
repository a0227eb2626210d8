// Issue 5's must-show through kfleetd itself: the control plane, scheduler and HTTP API in
// process, the terraform provisioner running the real terraform and AWS provider, and a fake
// EC2 on loopback whose answers are scripted per region. A job falls back past a stockout, an
// unsupported region and a quota error to the first region with capacity, runs there, and the
// user sees every failure; blocks expire; an auth failure stops provisioning with its reason;
// an idle agent is terminated. Fails, never skips, without terraform or the provider mirror.
#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "agents_watch.hpp"
#include "fake_ec2.hpp"
#include "fake_ec2_terraform.hpp"
#include "kfleet/provision_terraform/terraform_provisioner.hpp"
#include "kfleetd_in_process.hpp"

namespace kfleet::provision {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::FakeEc2;
using testing::RegionBehaviour;

constexpr const char* kUser = "tf-e2e-user-0123456789";
constexpr const char* kEnrol = "tf-e2e-enrol-0123456789";  // terraform wants >= 16 characters
// Longer than one apply on an idle machine, so the walk through the regions does not keep
// going back to us-east-1 (each retry is another apply); step 2 waits for it to expire.
constexpr TimeMs kStockoutCooldownMs = 45'000;
constexpr TimeMs kIdleTtlMs = 3'000;
// Up to four applies one after another (the fallback walks the regions in order), each starting
// the AWS provider a few times: about two minutes on an idle 2-core machine, over ten minutes on
// one whose cores are shared with builds (seen: 190 s per apply at a load of 15).
constexpr auto kTerraformDeadline = std::chrono::seconds(1200);

const std::vector<std::string> kFallbackRegions = {"us-east-1", "us-east-2", "us-west-2",
                                                   "ap-northeast-1"};

class KfleetdWithTerraform : public testing::KfleetdInProcess {
 protected:
  void SetUp() override {
    testing::require_terraform();
    if (HasFatalFailure()) return;

    TerraformConfig c = testing::fake_ec2_config(
        ec2_, state_root_.path(), {"us-east-1", "us-east-2", "us-west-2", "ap-northeast-1", "eu-west-1"},
        kEnrol, 4);
    auto clock = std::make_shared<SystemClock>();
    auto p = make_terraform_provisioner(std::move(c), executor(), clock);
    ASSERT_TRUE(p.ok()) << p.error().message;
    prov_ = std::move(p.value());

    core::Config cfg;
    cfg.user_tokens = {kUser};
    cfg.enrol_token = kEnrol;
    cfg.block_policy.stockout_base_ms = kStockoutCooldownMs;  // kfleetd --stockout-cooldown-ms
    cfg.idle_agent_ttl_ms = kIdleTtlMs;                        // kfleetd --idle-agent-ttl-s
    serve(*prov_, clock, cfg, ":memory:");
    watch_ = std::make_unique<testing::AgentsWatch>(url_, kUser);
  }

  void TearDown() override {
    watch_.reset();
    stop_serving();
    if (prov_) prov_->shutdown();  // waits for terraform runs still under way
  }

  json wait_for_capacity(std::int64_t id, const std::string& outcome) {
    return KfleetdInProcess::wait_for_capacity(id, outcome, kTerraformDeadline);
  }
  // An agent as the launched instance's user data would enrol it.
  std::int64_t run_on_new_agent(std::int64_t job_id, const std::string& region, const std::string& instance) {
    return KfleetdInProcess::run_on_new_agent(job_id, region, instance, "terraform", "tf-" + instance);
  }

  FakeEc2 ec2_;
  const kfleet::testing::TempDir state_root_{"kfleet-tf-kfleetd"};
  std::unique_ptr<TerraformProvisioner> prov_;
  std::unique_ptr<testing::AgentsWatch> watch_;
};

TEST_F(KfleetdWithTerraform, JobsFallBackBlocksExpireAuthStopsAndIdleAgentsAreTerminated) {
  ec2_.set_behaviours({{"us-east-1", RegionBehaviour::stockout},
                       {"us-east-2", RegionBehaviour::unsupported},
                       {"us-west-2", RegionBehaviour::quota},
                       {"ap-northeast-1", RegionBehaviour::capacity},
                       {"eu-west-1", RegionBehaviour::auth}});

  // 1. The job lands in the first region with capacity, after each failing one was tried once
  // (the stockout region, whose block is short, may be retried in between: a stockout again).
  const std::int64_t a = submit("tf-e2e-a", kFallbackRegions);
  ASSERT_GT(a, 0);
  const json landed = wait_for_capacity(a, "ok");
  ASSERT_FALSE(landed.is_null());
  EXPECT_EQ(landed["data"]["region"], "ap-northeast-1");
  ASSERT_EQ(landed["data"]["instance_ids"].size(), 1u);
  const std::string instance_a = landed["data"]["instance_ids"][0];
  const auto capacity_a = events(a, "capacity");
  std::map<std::string, std::vector<json>> by_region;
  for (const auto& e : capacity_a) by_region[e["data"]["region"]].push_back(e["data"]);
  ASSERT_EQ(capacity_a.front()["data"]["region"], "us-east-1") << json(capacity_a).dump();
  for (const auto& d : by_region["us-east-1"]) {
    EXPECT_EQ(d["outcome"], "stockout") << d.dump();
    EXPECT_NE(d["message"].get<std::string>().find("InsufficientInstanceCapacity"), std::string::npos) << d.dump();
    EXPECT_TRUE(d.contains("blocked_until")) << d.dump();
  }
  ASSERT_EQ(by_region["us-east-2"].size(), 1u) << json(capacity_a).dump();
  EXPECT_EQ(by_region["us-east-2"][0]["outcome"], "unsupported");
  EXPECT_NE(by_region["us-east-2"][0]["message"].get<std::string>().find("is not supported"), std::string::npos);
  ASSERT_EQ(by_region["us-west-2"].size(), 1u) << json(capacity_a).dump();
  EXPECT_EQ(by_region["us-west-2"][0]["outcome"], "quota");
  EXPECT_NE(by_region["us-west-2"][0]["message"].get<std::string>().find("VcpuLimitExceeded"), std::string::npos);
  EXPECT_EQ(by_region["ap-northeast-1"].size(), 1u);
  EXPECT_TRUE(by_region["eu-west-1"].empty()) << "eu-west-1 is not in the job's regions";
  const auto launched = ec2_.instances("ap-northeast-1");
  ASSERT_EQ(launched.size(), 1u);
  EXPECT_EQ(launched[0].id, instance_a);
  EXPECT_TRUE(ec2_.instances("us-east-1").empty());

  // The failures are on GET /api/v1/agents: the quota block stands (30 min) and says quota;
  // the short stockout block was seen while it stood.
  const json fleet = get("/api/v1/agents");
  bool quota_block = false;
  for (const auto& b : fleet["blocks"])
    if (b["region"] == "us-west-2" && b["kind"] == "quota" &&
        b["reason"].get<std::string>().find("VcpuLimitExceeded") != std::string::npos)
      quota_block = true;
  EXPECT_TRUE(quota_block) << fleet.dump();
  EXPECT_TRUE(watch_->saw_block("us-east-1", "stockout", "InsufficientInstanceCapacity")) << watch_->seen();
  EXPECT_TRUE(watch_->saw_block("us-east-2", "unsupported", "not supported")) << watch_->seen();
  EXPECT_FALSE(fleet.contains("provisioning_stopped")) << fleet.dump();

  const std::int64_t agent_a = run_on_new_agent(a, "ap-northeast-1", instance_a);
  ASSERT_TRUE(testing::wait_until(std::chrono::seconds(10), [&] { return job(a)["state"] == "passed"; }))
      << job(a).dump();
  EXPECT_EQ(job(a)["current_run_id"], 0);

  // 2. Once the stockout block has expired, us-east-1 (now with capacity) is tried again and a
  // second job lands there, ahead of its later choices.
  ec2_.set_behaviour("us-east-1", RegionBehaviour::capacity);
  TimeMs stockout_until = 0;
  for (const auto& d : by_region["us-east-1"]) stockout_until = std::max(stockout_until, d["blocked_until_ms"].get<TimeMs>());
  // Until it expires the block is listed; a job submitted then would skip us-east-1.
  ASSERT_TRUE(testing::wait_until(std::chrono::milliseconds(stockout_until - SystemClock().now_ms() + 10'000), [&] {
    const json now = get("/api/v1/agents");
    for (const auto& blk : now["blocks"])
      if (blk["region"] == "us-east-1") return false;
    return true;
  })) << get("/api/v1/agents").dump();
  EXPECT_GE(SystemClock().now_ms(), stockout_until);
  const std::int64_t b = submit("tf-e2e-b", kFallbackRegions);
  ASSERT_GT(b, 0);
  const json landed_b = wait_for_capacity(b, "ok");
  ASSERT_FALSE(landed_b.is_null());
  EXPECT_EQ(landed_b["data"]["region"], "us-east-1") << json(events(b, "capacity")).dump();
  EXPECT_EQ(events(b, "capacity").size(), 1u) << "a second try in us-east-1 needs no fallback";
  for (const auto& d : events(b, "sched.decision"))
    if (d["data"]["action"] == "provision") {
      EXPECT_GE(d["ts_ms"].get<TimeMs>(), stockout_until) << d.dump();
    }
  ASSERT_EQ(landed_b["data"]["instance_ids"].size(), 1u);
  const std::string instance_b = landed_b["data"]["instance_ids"][0];
  run_on_new_agent(b, "us-east-1", instance_b);
  ASSERT_TRUE(testing::wait_until(std::chrono::seconds(10), [&] { return job(b)["state"] == "passed"; }))
      << job(b).dump();

  // 3. The first agent, idle past its TTL, is retired and its instance terminated in EC2.
  ASSERT_TRUE(testing::wait_until(kTerraformDeadline, [&] {
    for (const auto& id : ec2_.terminate_requests())
      if (id == instance_a) return true;
    return false;
  })) << "no TerminateInstances for " << instance_a << "; agents: " << get("/api/v1/agents").dump();
  bool retired = false;
  // Retired agents are history: not in the default (live) list, listed under state=all.
  const json after_idle = get("/api/v1/agents?state=all&limit=1000");
  for (const auto& ag : after_idle["agents"])
    if (ag["id"] == agent_a) retired = ag["state"] == "retired";
  EXPECT_TRUE(retired) << after_idle.dump();
  ASSERT_TRUE(testing::wait_until(std::chrono::seconds(60), [&] {
    auto now = ec2_.instances("ap-northeast-1");
    return now.size() == 1 && now[0].state == "terminated";
  }));

  // 4. An auth failure stops provisioning, and the job says why.
  const std::int64_t c = submit("tf-e2e-c", {"eu-west-1"});
  ASSERT_GT(c, 0);
  const json refused = wait_for_capacity(c, "fatal");
  ASSERT_FALSE(refused.is_null());
  EXPECT_NE(refused["data"]["message"].get<std::string>().find("AuthFailure"), std::string::npos) << refused.dump();
  EXPECT_EQ(ec2_.run_instances_calls("eu-west-1"), 0);
  ASSERT_TRUE(testing::wait_until(std::chrono::seconds(10), [&] {
    return get("/api/v1/agents").value("provisioning_stopped", "").find("AuthFailure") != std::string::npos;
  })) << get("/api/v1/agents").dump();
  ASSERT_TRUE(testing::wait_until(std::chrono::seconds(10), [&] {
    return job(c)["state_reason"].get<std::string>().find("AuthFailure") != std::string::npos;
  })) << "the waiting job does not say why provisioning stopped: " << job(c).dump();
  EXPECT_FALSE(is_terminal(job_state_from_string(job(c)["state"].get<std::string>()).value_or(JobState::error)))
      << job(c).dump();
  for (const auto& action : ec2_.unknown_actions()) ADD_FAILURE() << "the fake has no " << action;
}

}  // namespace
}  // namespace kfleet::provision
