// Region fallback through the simulated cloud: stockouts scripted per region, real agent
// processes started where capacity exists, blocks that expire.
#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

nlohmann::json cloud(const std::vector<std::string>& r1, const std::vector<std::string>& r2,
                     const std::vector<std::string>& r3) {
  auto region = [](const char* n, const std::vector<std::string>& s) {
    return nlohmann::json{{"name", n}, {"gpu", "L4"}, {"arch", "sm_89"}, {"capacity", 2},
                          {"script", s}, {"delay_ms", 20}};
  };
  return {{"max_instances", 6},
          {"regions", {region("us-central1-a", r1), region("southamerica-east1-c", r2),
                       region("us-west1-b", r3)}}};
}

const char* kRegions = "us-central1-a, southamerica-east1-c, us-west1-b";

std::string agent_region(Cluster& c, const nlohmann::json& job) {
  auto agents = c.get("/api/v1/agents?state=all&limit=1000")["agents"];  // retired too
  for (auto& a : agents)
    if (a["id"] == job["runs"].back()["agent_id"]) return a["region"];
  return "";
}

TEST(RegionFallback, StockoutsInTheFirstTwoRegionsLandTheJobInTheThird) {
  ClusterOptions o;
  o.provisioner = "simulated";
  o.simulated_cloud = cloud({"stockout"}, {"stockout"}, {});
  Cluster c(o);
  c.start_kfleetd();
  auto id = c.submit_api(c.write_job("fb", Cluster::sim_job_yaml("fallback/1", "L4", kRegions)));
  auto j = c.wait_terminal(id, 60000);
  EXPECT_EQ(j["job"]["state"], "passed") << c.logs();
  EXPECT_EQ(agent_region(c, j), "us-west1-b");
  std::vector<std::string> outcomes;
  for (auto& e : c.job_events(id))
    if (e["type"] == "capacity")
      outcomes.push_back(e["data"]["region"].get<std::string>() + ":" +
                         e["data"]["outcome"].get<std::string>());
  EXPECT_EQ(outcomes, (std::vector<std::string>{"us-central1-a:stockout",
                                                "southamerica-east1-c:stockout", "us-west1-b:ok"}));
  // The stockouts are visible as region blocks in the fleet view.
  auto blocks = c.get("/api/v1/agents")["blocks"];
  EXPECT_EQ(blocks.size(), 2u) << blocks.dump(2);
}

TEST(RegionFallback, WithEveryRegionOutTheJobWaitsAndRunsOnceABlockExpires) {
  ClusterOptions o;
  o.provisioner = "simulated";
  o.simulated_cloud = cloud({"stockout"}, {"stockout"}, {"stockout"});
  o.stockout_cooldown_ms = 1500;
  Cluster c(o);
  c.start_kfleetd();
  auto id = c.submit_api(c.write_job("all", Cluster::sim_job_yaml("fallback/2", "L4", kRegions)));
  nlohmann::json seen;
  ASSERT_TRUE(wait_until(
      [&] {
        seen = c.job(id)["job"];
        return seen["state"] == "waiting_capacity" &&
               seen["state_reason"].get<std::string>().find("us-west1-b") != std::string::npos;
      },
      std::chrono::seconds(20)))
      << seen.dump(2) << c.logs();
  const std::string reason = seen["state_reason"];
  for (const char* r : {"us-central1-a", "southamerica-east1-c", "us-west1-b"})
    EXPECT_NE(reason.find(r), std::string::npos) << reason;
  EXPECT_NE(reason.find("stockout"), std::string::npos) << reason;
  // The first block to expire lets its region be tried again; its script is spent, so it has
  // capacity now, and the job runs there.
  auto j = c.wait_terminal(id, 60000);
  EXPECT_EQ(j["job"]["state"], "passed") << c.logs();
  EXPECT_FALSE(agent_region(c, j).empty());
}

}  // namespace
}  // namespace kfleet::e2e
