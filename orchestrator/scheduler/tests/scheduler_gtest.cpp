// plan() on hand-built snapshots: ordering, matching, region preference and provisioning.
#include <gtest/gtest.h>

#include "scheduler_fixtures.hpp"

namespace kfleet::sched {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace)

const std::vector<std::string> kThree = {"us-central1-a", "southamerica-east1-c", "us-west1-b"};

TEST(Plan, PriorityThenFifo) {
  Snapshot s;
  s.now = kNow;
  s.queue = {job(5, "L4"), job(2, "L4"), job(9, "L4", {}, 10), job(1, "L4")};
  s.agents = {l4(1, "a"), l4(2, "b"), l4(3, "c")};
  const Plan p = plan(s);
  ASSERT_EQ(p.assign.size(), 3u);
  EXPECT_EQ(p.assign[0].job_id, 9);  // highest priority first
  EXPECT_EQ(p.assign[1].job_id, 1);  // then by id
  EXPECT_EQ(p.assign[2].job_id, 2);
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_EQ(p.wait[0].job_id, 5);
  EXPECT_FALSE(p.wait[0].capacity);
  EXPECT_EQ(p.wait[0].reason, "waiting for an idle L4 agent (3 busy, 0 idle)");
}

TEST(Plan, MatchesClassAndArch) {
  Snapshot s;
  s.queue = {job(1, "sm_90"), job(2, "l4"), job(3, "gfx1151")};
  s.agents = {l4(10, "r"), agent(11, "r", gpu("H100", "sm_90a"))};
  const Plan p = plan(s);
  ASSERT_EQ(p.assign.size(), 2u);
  EXPECT_EQ(p.assign[0].job_id, 1);
  EXPECT_EQ(p.assign[0].agent_id, 11);
  EXPECT_EQ(p.assign[1].job_id, 2);
  EXPECT_EQ(p.assign[1].agent_id, 10);
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_EQ(p.wait[0].reason, "no agent serves gpu 'gfx1151' and the fleet cannot grow");
}

// triton and torch jobs go only to agents whose Python records them (what the agent reported
// with its GPU, kfleet::gpu_runs_language); cuda jobs are matched as before.
TEST(Plan, PythonJobsGoOnlyWhereTheAgentsPythonRecordsThem) {
  auto h200 = [](std::int64_t id, nlohmann::json python) {
    GpuInfo g = gpu("H200", "sm_90a");
    g.vendor = "nvidia";
    if (!python.is_null()) g.extra["python"] = std::move(python);
    return agent(id, "r", g);
  };
  auto with_language = [](std::int64_t id, const std::string& language) {
    PendingJob j = job(id, "H200");
    j.language = language;
    return j;
  };
  Snapshot s;
  s.queue = {with_language(1, "triton"), with_language(2, "torch"), with_language(3, "cuda")};
  s.agents = {h200(10, nlohmann::json()),  // no Python reported
              h200(11, {{"torch", "2.9.0"}, {"languages", {"torch"}},
                        {"missing", {"triton: No module named 'triton'"}}})};
  Plan p = plan(s);
  ASSERT_EQ(p.assign.size(), 2u);
  EXPECT_EQ(p.assign[0].job_id, 2);  // torch: the agent with torch
  EXPECT_EQ(p.assign[0].agent_id, 11);
  EXPECT_EQ(p.assign[1].job_id, 3);  // cuda: any H200
  EXPECT_EQ(p.assign[1].agent_id, 10);
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_EQ(p.wait[0].job_id, 1);
  EXPECT_EQ(p.wait[0].reason,
            "no agent of class H200 has torch and triton for triton kernels (agent 11: torch "
            "2.9.0; no triton: No module named 'triton') and the fleet cannot grow");

  // With triton there, the triton job takes it; a job without a language matches by class.
  s.agents.push_back(h200(12, {{"torch", "2.9.0"}, {"triton", "3.5.0"}, {"languages", {"torch", "triton"}}}));
  s.queue.push_back(job(4, "H200"));
  p = plan(s);
  ASSERT_EQ(p.assign.size(), 3u);
  EXPECT_EQ(p.assign[0].job_id, 1);
  EXPECT_EQ(p.assign[0].agent_id, 12);
  EXPECT_EQ(p.assign[1].job_id, 2);
  EXPECT_EQ(p.assign[1].agent_id, 11);
  EXPECT_EQ(p.assign[2].job_id, 3);
  EXPECT_EQ(p.assign[2].agent_id, 10);
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_EQ(p.wait[0].job_id, 4);
}

TEST(Plan, BusyAgentsAreNotUsedAndNoAgentTakesTwoJobs) {
  Snapshot s;
  s.queue = {job(1, "L4"), job(2, "L4"), job(3, "L4")};
  s.agents = {l4(1, "r", /*idle=*/false), l4(2, "r")};
  const Plan p = plan(s);
  ASSERT_EQ(p.assign.size(), 1u);
  EXPECT_EQ(p.assign[0].agent_id, 2);
  ASSERT_EQ(p.wait.size(), 2u);
  EXPECT_EQ(p.wait[0].reason, "waiting for an idle L4 agent (2 busy, 0 idle)");
}

TEST(Plan, IdleAgentsFollowTheJobsRegionOrder) {
  Snapshot s;
  s.queue = {job(1, "L4", kThree)};
  s.agents = {l4(1, "us-west1-b"), l4(2, "southamerica-east1-c"), l4(3, "europe-west4-a")};
  const Plan p = plan(s);
  ASSERT_EQ(p.assign.size(), 1u);
  EXPECT_EQ(p.assign[0].agent_id, 2);
  EXPECT_EQ(p.assign[0].region, "southamerica-east1-c");
  EXPECT_EQ(p.assign[0].reason, "idle L4 agent 2 in southamerica-east1-c (2nd choice)");
}

TEST(Plan, AgentOutsideTheJobsRegionsIsNotUsed) {
  Snapshot s;
  s.queue = {job(1, "L4", {"us-east-1"})};
  s.agents = {l4(1, "eu-west-1a"), l4(2, "us-east-1b")};
  const Plan p = plan(s);
  ASSERT_EQ(p.assign.size(), 1u);
  EXPECT_EQ(p.assign[0].agent_id, 2);  // a zone of the listed region
}

TEST(Plan, StockoutsInFirstTwoRegionsProvisionInTheThird) {
  Snapshot s;
  s.now = kNow;
  s.queue = {job(1, "L4", kThree)};
  s.provisioner = sim_cloud(4, kThree);
  s.blocks = {block("us-central1-a", "stockout", kNow + 60'000),
              block("southamerica-east1-c", "stockout", kNow + 30'000)};
  const Plan p = plan(s);
  ASSERT_EQ(p.provision.size(), 1u);
  EXPECT_EQ(p.provision[0].region, "us-west1-b");
  EXPECT_EQ(p.provision[0].gpu, "L4");
  EXPECT_NE(p.provision[0].reason.find("us-central1-a blocked (stockout)"), std::string::npos);
  EXPECT_NE(p.provision[0].reason.find("southamerica-east1-c blocked (stockout)"),
            std::string::npos);
  EXPECT_TRUE(p.wait.empty());
}

TEST(Plan, ExpiredAndOtherProvidersBlocksDoNotCount) {
  Snapshot s;
  s.now = kNow;
  s.queue = {job(1, "L4", kThree)};
  s.provisioner = sim_cloud(4, kThree);
  auto other = block("us-central1-a", "stockout", kNow + 60'000);
  other.provider = "terraform";
  s.blocks = {block("us-central1-a", "stockout", kNow), other,
              block("us-central1-a", "stockout", kNow + 60'000, "", "H100")};
  const Plan p = plan(s);
  ASSERT_EQ(p.provision.size(), 1u);
  EXPECT_EQ(p.provision[0].region, "us-central1-a");
}

TEST(Plan, AllBlockedWaitsUntilEarliestExpiryThenRetries) {
  Snapshot s;
  s.now = kNow;
  s.queue = {job(1, "L4", kThree)};
  s.provisioner = sim_cloud(4, kThree);
  s.blocks = {block("us-central1-a", "stockout", kNow + 90'000),
              block("southamerica-east1-c", "unsupported", kNow + 40'000),
              block("us-west1-b", "stockout", kNow + 70'000)};
  Plan p = plan(s);
  ASSERT_TRUE(p.provision.empty());
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_TRUE(p.wait[0].capacity);
  EXPECT_EQ(p.wait[0].retry_at_ms, kNow + 40'000);
  for (const auto& r : kThree) EXPECT_NE(p.wait[0].reason.find(r), std::string::npos) << r;
  EXPECT_NE(p.wait[0].reason.find("(unsupported) until " + format_iso8601(kNow + 40'000)),
            std::string::npos)
      << p.wait[0].reason;

  s.now = p.wait[0].retry_at_ms;
  p = plan(s);
  ASSERT_EQ(p.provision.size(), 1u);
  EXPECT_EQ(p.provision[0].region, "southamerica-east1-c");
}

TEST(Plan, QuotaBlockIsShownAndSkipped) {
  Snapshot s;
  s.now = kNow;
  s.queue = {job(1, "L4", {"us-east-1", "us-east-2"})};
  s.provisioner = sim_cloud(4, {"us-east-1", "us-east-2"});
  s.blocks = {block("us-east-1", "quota", kNow + 1'800'000, "VcpuLimitExceeded: limit is 8")};
  const Plan p = plan(s);
  ASSERT_EQ(p.provision.size(), 1u);
  EXPECT_EQ(p.provision[0].region, "us-east-2");
  EXPECT_NE(p.provision[0].reason.find("quota exceeded in us-east-1: VcpuLimitExceeded: limit is 8"),
            std::string::npos)
      << p.provision[0].reason;
}

TEST(Plan, ARegionNamedByAJobMeansItsZonesInTheProvisionersOrder) {
  Snapshot s;
  s.now = kNow;
  s.queue = {job(1, "L4", {"us-central1", "us-west1-b"})};
  s.provisioner = sim_cloud(4, {"us-west1-b", "us-central1-c", "us-central1-a"});
  s.blocks = {block("us-central1-c", "stockout", kNow + 60'000)};
  Plan p = plan(s);
  ASSERT_EQ(p.provision.size(), 1u);
  EXPECT_EQ(p.provision[0].region, "us-central1-a") << p.provision[0].reason;
  EXPECT_NE(p.provision[0].reason.find("us-central1-c blocked (stockout)"), std::string::npos)
      << p.provision[0].reason;

  // Every zone of the region out: the job's next entry is tried; all out: it waits, naming zones.
  s.blocks.push_back(block("us-central1-a", "stockout", kNow + 30'000));
  p = plan(s);
  ASSERT_EQ(p.provision.size(), 1u);
  EXPECT_EQ(p.provision[0].region, "us-west1-b");
  s.blocks.push_back(block("us-west1-b", "stockout", kNow + 90'000));
  p = plan(s);
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_TRUE(p.wait[0].capacity);
  EXPECT_EQ(p.wait[0].retry_at_ms, kNow + 30'000);
  for (const char* z : {"us-central1-c", "us-central1-a", "us-west1-b"})
    EXPECT_NE(p.wait[0].reason.find(z), std::string::npos) << p.wait[0].reason;
}

TEST(Plan, ARegionWideQuotaBlockCoversEachOfItsZones) {
  Snapshot s;
  s.now = kNow;
  s.queue = {job(1, "L4", {"us-central1-a", "us-central1-b", "europe-west4-a"})};
  s.provisioner = sim_cloud(4, {"us-central1-a", "us-central1-b", "europe-west4-a"});
  s.blocks = {block("us-central1", "quota", kNow + 1'800'000,
                    "QUOTA_EXCEEDED: Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 0.0 in region us-central1.")};
  const Plan p = plan(s);
  ASSERT_EQ(p.provision.size(), 1u);
  EXPECT_EQ(p.provision[0].region, "europe-west4-a");
  EXPECT_NE(p.provision[0].reason.find("quota exceeded in us-central1-b: QUOTA_EXCEEDED"), std::string::npos)
      << p.provision[0].reason;
}

TEST(Plan, AnyRegionUsesTheProvisionersOrder) {
  Snapshot s;
  s.now = kNow;
  s.queue = {job(1, "L4")};
  s.provisioner = sim_cloud(4, {"eu-west-1", "us-east-1"});
  s.blocks = {block("eu-west-1", "stockout", kNow + 1000)};
  const Plan p = plan(s);
  ASSERT_EQ(p.provision.size(), 1u);
  EXPECT_EQ(p.provision[0].region, "us-east-1");
}

TEST(Plan, BudgetLimitsRequests) {
  Snapshot s;
  s.now = kNow;
  s.queue = {job(1, "L4"), job(2, "L4"), job(3, "L4"), job(4, "L4")};
  s.provisioner = sim_cloud(3, {"us-east-1"});
  s.in_flight = {InFlight{99, "us-east-1", "L4"}};
  const Plan p = plan(s);
  ASSERT_EQ(p.provision.size(), 2u);
  EXPECT_EQ(p.provision[0].job_id, 1);
  EXPECT_EQ(p.provision[1].job_id, 2);
  ASSERT_EQ(p.wait.size(), 2u);
  EXPECT_NE(p.wait[0].reason.find("no budget left"), std::string::npos) << p.wait[0].reason;
}

TEST(Plan, InFlightJobsAreNotRequestedAgain) {
  Snapshot s;
  s.now = kNow;
  s.queue = {job(1, "L4", {"us-east-1"})};
  s.provisioner = sim_cloud(5, {"us-east-1"});
  s.in_flight = {InFlight{1, "us-east-1", "L4"}};
  const Plan p = plan(s);
  EXPECT_TRUE(p.provision.empty());
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_TRUE(p.wait[0].capacity);
  EXPECT_EQ(p.wait[0].reason, "capacity requested in us-east-1");
}

TEST(Plan, IdleAgentBeatsProvisioningAndInFlight) {
  Snapshot s;
  s.queue = {job(1, "L4", {"us-east-1"})};
  s.agents = {l4(7, "us-east-1a")};
  s.provisioner = sim_cloud(5, {"us-east-1"});
  s.in_flight = {InFlight{1, "us-east-1", "L4"}};
  const Plan p = plan(s);
  ASSERT_EQ(p.assign.size(), 1u);
  EXPECT_EQ(p.assign[0].agent_id, 7);
  EXPECT_TRUE(p.wait.empty());
}

TEST(Plan, ProvisionerThatDoesNotOfferTheGpuSaysSo) {
  Snapshot s;
  s.queue = {job(1, "H100")};
  s.provisioner = sim_cloud(5, {"us-east-1"});
  const Plan p = plan(s);
  ASSERT_EQ(p.wait.size(), 1u);
  EXPECT_FALSE(p.wait[0].capacity);
  EXPECT_EQ(p.wait[0].reason, "no agent serves gpu 'H100' and provisioner 'simulated' does not offer it");
}

TEST(RegionMatches, ExactAndZones) {
  EXPECT_TRUE(region_matches("us-east-1", "us-east-1"));
  EXPECT_TRUE(region_matches("us-east-1", "us-east-1a"));
  EXPECT_TRUE(region_matches("us-central1", "us-central1-a"));
  EXPECT_FALSE(region_matches("us-east-1", "us-east-10"));
  EXPECT_FALSE(region_matches("us-east-1a", "us-east-1"));
  EXPECT_FALSE(region_matches("us-central1", "us-central1-ab"));
  EXPECT_FALSE(region_matches("", "us-east-1"));
}

}  // namespace
}  // namespace kfleet::sched
