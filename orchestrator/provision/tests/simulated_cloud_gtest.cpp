// SimulatedCloud's answers: scripts, capacity per region, instance limits, and the messages of
// the cloud that owns the location (AWS EC2 or Compute Engine).
#include <gtest/gtest.h>

#include <optional>

#include "provision_test_util.hpp"

namespace kfleet::provision {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace)

struct Fixture : ::testing::Test {
  boost::asio::io_context io;
  TempDir tmp;

  CapacityResult ask(SimulatedCloud& cloud, const std::string& region, const std::string& gpu = "L4") {
    std::optional<CapacityResult> got;
    cloud.request(CapacityRequest{1, region, gpu}, [&](CapacityResult r) { got = std::move(r); });
    EXPECT_FALSE(got) << "completion must come through the executor, not inline";
    EXPECT_TRUE(run_until(io, [&] { return got.has_value(); }));
    return got.value_or(CapacityResult{});
  }
  Result<void> give_back(SimulatedCloud& cloud, const std::string& id) {
    std::optional<Result<void>> got;
    cloud.release(id, [&](Result<void> r) { got = std::move(r); });
    EXPECT_TRUE(run_until(io, [&] { return got.has_value(); }));
    return got.value_or(make_error(Errc::internal, "release never completed"));
  }
};

using SimulatedCloudTest = Fixture;

TEST_F(SimulatedCloudTest, ScriptIsConsumedThenCapacityDecides) {
  SimulatedCloud cloud(io.get_executor(), one_region(tmp.path().string(), 2, {"stockout", "throttle", "ok"}));
  EXPECT_EQ(cloud.capacity_budget(), 8);
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::stockout);
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::transient);
  const auto first = ask(cloud, "us-east-1");
  ASSERT_EQ(first.outcome, Outcome::ok) << first.message;
  ASSERT_EQ(first.instance_ids.size(), 1u);
  EXPECT_EQ(cloud.used("us-east-1"), 1);
  // Script used up: ok while capacity remains, then stockout.
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::ok);
  EXPECT_EQ(cloud.used("us-east-1"), 2);
  EXPECT_EQ(cloud.capacity_budget(), 6);
  const auto full = ask(cloud, "us-east-1");
  EXPECT_EQ(full.outcome, Outcome::stockout);
  EXPECT_EQ(cloud.instances().size(), 2u);
}

TEST_F(SimulatedCloudTest, CapacityIsPerRegion) {
  auto cfg = one_region(tmp.path().string(), 1);
  SimulatedRegion west;
  west.name = "us-west-2";
  west.capacity = 1;
  cfg.regions.push_back(west);
  SimulatedCloud cloud(io.get_executor(), cfg);
  EXPECT_EQ(cloud.regions(), (std::vector<std::string>{"us-east-1", "us-west-2"}));
  EXPECT_EQ(cloud.gpu_classes(), (std::vector<std::string>{"L4"}));
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::ok);
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::stockout);
  EXPECT_EQ(ask(cloud, "us-west-2").outcome, Outcome::ok);
  const auto insts = cloud.instances();
  ASSERT_EQ(insts.size(), 2u);
  EXPECT_EQ(insts[0].region, "us-east-1");
  EXPECT_EQ(insts[1].region, "us-west-2");
  EXPECT_NE(insts[0].id, insts[1].id);
}

TEST_F(SimulatedCloudTest, MessagesReadLikeAws) {
  SimulatedCloud cloud(io.get_executor(),
                       one_region(tmp.path().string(), 0, {"stockout", "unsupported", "quota", "auth", "throttle"}));
  // Each scripted answer in turn: its outcome, and how its message begins (whole: is).
  struct Answer {
    Outcome outcome;
    std::string begins;
    bool whole = false;
  };
  const Answer want[] = {
      {Outcome::stockout, "InsufficientInstanceCapacity: We currently do not have sufficient "
                          "g6.xlarge capacity in the Availability Zone you requested (us-east-1a)."},
      {Outcome::unsupported, "Unsupported: Your requested instance type (g6.xlarge) is not "
                             "supported in your requested Availability Zone (us-east-1a)"},
      {Outcome::quota, "VcpuLimitExceeded: You have requested more vCPU capacity than your "
                       "current vCPU limit"},
      {Outcome::fatal, "AuthFailure: AWS was not able to validate the provided access credentials",
       true},
      {Outcome::transient, "RequestLimitExceeded"}};
  for (const auto& w : want) {
    auto r = ask(cloud, "us-east-1");
    EXPECT_EQ(r.outcome, w.outcome) << r.message;
    if (w.whole) EXPECT_EQ(r.message, w.begins);
    else EXPECT_EQ(r.message.rfind(w.begins, 0), 0u) << r.message;
  }
}

// Seed 001's fleet lists Google Cloud zones: the simulated answers there speak Compute Engine's
// words and machine types, not EC2's.
TEST_F(SimulatedCloudTest, MessagesInGoogleCloudZonesReadLikeComputeEngine) {
  auto cfg = one_region(tmp.path().string(), 0, {"stockout", "unsupported", "quota", "auth", "throttle"});
  cfg.regions[0].name = "southamerica-east1-c";
  SimulatedCloud cloud(io.get_executor(), cfg);
  auto r = ask(cloud, "southamerica-east1-c");
  EXPECT_EQ(r.outcome, Outcome::stockout);
  EXPECT_EQ(r.message, "ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'projects/kfleet-sim/zones/southamerica-east1-c' "
                       "does not have enough resources available to fulfill the request.  Try a different "
                       "zone, or try again later.");
  r = ask(cloud, "southamerica-east1-c");
  EXPECT_EQ(r.outcome, Outcome::unsupported);
  EXPECT_NE(r.message.find("Machine type with name 'g2-standard-4' does not exist in zone "
                           "'southamerica-east1-c'"),
            std::string::npos) << r.message;
  r = ask(cloud, "southamerica-east1-c");
  EXPECT_EQ(r.outcome, Outcome::quota);
  EXPECT_EQ(r.message.rfind("QUOTA_EXCEEDED: Quota 'GPUS_ALL_REGIONS' exceeded.", 0), 0u) << r.message;
  r = ask(cloud, "southamerica-east1-c");
  EXPECT_EQ(r.outcome, Outcome::fatal);
  EXPECT_EQ(r.message.rfind("forbidden: Required 'compute.instances.create' permission", 0), 0u) << r.message;
  r = ask(cloud, "southamerica-east1-c");
  EXPECT_EQ(r.outcome, Outcome::transient);
  EXPECT_EQ(r.message, "rateLimitExceeded: Rate Limit Exceeded");
  for (const auto& m : {std::string("Availability Zone"), std::string("g6.xlarge")})
    EXPECT_EQ(r.message.find(m), std::string::npos);
}

// A Google Cloud region (no zone letter) lands in its "-a" zone, as an AWS region lands in its "a".
TEST_F(SimulatedCloudTest, GoogleCloudRegionLandsInItsFirstZone) {
  auto cfg = one_region(tmp.path().string(), 0, {"stockout"});
  cfg.regions[0].name = "us-central1";
  SimulatedCloud cloud(io.get_executor(), cfg);
  const auto r = ask(cloud, "us-central1");
  EXPECT_NE(r.message.find("zones/us-central1-a'"), std::string::npos) << r.message;
}

TEST_F(SimulatedCloudTest, WrongGpuOrRegionIsUnsupported) {
  SimulatedCloud cloud(io.get_executor(), one_region(tmp.path().string(), 1, {"ok"}));
  const auto h100 = ask(cloud, "us-east-1", "H100");
  EXPECT_EQ(h100.outcome, Outcome::unsupported);
  EXPECT_NE(h100.message.find("(g6.xlarge)"), std::string::npos) << h100.message;
  const auto nowhere = ask(cloud, "mars-north-1");
  EXPECT_EQ(nowhere.outcome, Outcome::unsupported);
  EXPECT_NE(nowhere.message.find("mars-north-1"), std::string::npos);
  // Neither consumed the script's "ok".
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::ok);
}

TEST_F(SimulatedCloudTest, MaxInstancesGivesVcpuLimit) {
  auto cfg = one_region(tmp.path().string(), 5);
  cfg.max_instances = 1;
  SimulatedCloud cloud(io.get_executor(), cfg);
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::ok);
  EXPECT_EQ(cloud.capacity_budget(), 0);
  const auto r = ask(cloud, "us-east-1");
  EXPECT_EQ(r.outcome, Outcome::quota);
  EXPECT_NE(r.message.find("vCPU limit of 4 "), std::string::npos) << r.message;
}

TEST_F(SimulatedCloudTest, ReleaseFreesCapacity) {
  SimulatedCloud cloud(io.get_executor(), one_region(tmp.path().string(), 1));
  const auto first = ask(cloud, "us-east-1");
  ASSERT_EQ(first.outcome, Outcome::ok) << first.message;
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::stockout);
  const auto released = give_back(cloud, first.instance_ids.at(0));
  EXPECT_TRUE(released.ok());
  EXPECT_EQ(cloud.used("us-east-1"), 0);
  EXPECT_TRUE(cloud.instances().empty());
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::ok);
  const auto unknown = give_back(cloud, "i-nope");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, Errc::not_found);
}

TEST_F(SimulatedCloudTest, SetScriptStagesOutcomes) {
  SimulatedCloud cloud(io.get_executor(), one_region(tmp.path().string(), 3));
  ASSERT_TRUE(cloud.set_script("us-east-1", {"stockout", "stockout"}).ok());
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::stockout);
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::stockout);
  EXPECT_EQ(ask(cloud, "us-east-1").outcome, Outcome::ok);
  EXPECT_EQ(cloud.set_script("nowhere", {"ok"}).error().code, Errc::not_found);
  EXPECT_EQ(cloud.set_script("us-east-1", {"maybe"}).error().code, Errc::invalid_argument);
}

TEST_F(SimulatedCloudTest, DelayIsReported) {
  auto cfg = one_region(tmp.path().string(), 1, {"stockout"});
  cfg.regions[0].delay_ms = 30;
  SimulatedCloud cloud(io.get_executor(), cfg);
  const auto start = std::chrono::steady_clock::now();
  const auto r = ask(cloud, "us-east-1");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
  EXPECT_DOUBLE_EQ(r.seconds, 0.03);
}

TEST_F(SimulatedCloudTest, MissingAgentBinaryIsFatalAndFreesCapacity) {
  auto cfg = one_region(tmp.path().string(), 1);
  cfg.agent_binary = (tmp.path() / "no-such-agent").string();
  SimulatedCloud cloud(io.get_executor(), cfg);
  const auto r = ask(cloud, "us-east-1");
  EXPECT_EQ(r.outcome, Outcome::fatal);
  EXPECT_NE(r.message.find("agent_binary"), std::string::npos) << r.message;
  EXPECT_EQ(cloud.used("us-east-1"), 0);
}

}  // namespace
}  // namespace kfleet::provision
