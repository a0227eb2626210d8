// One kfleetd process, two clouds: `--provisioner multi` with the Compute Engine provisioner
// (against the fake Compute Engine on loopback) for seed 001's zones and the simulated cloud for
// an AWS region. Agents are real kfleet-agent processes on the simulated GPU backend; the GCE
// one is started as the instance's startup script would start it (zone, provider, instance name).
#include <sys/stat.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "cluster.hpp"
#include "fake_gce.hpp"

namespace kfleet::e2e {
namespace {

using nlohmann::json;
using provision::testing::FakeGce;
using provision::testing::ZoneBehaviour;

const char* kSeedZones = "us-central1-a, southamerica-east1-c, us-west1-b, us-east4-a, europe-west4-a";

json agent_of(Cluster& c, const json& job) {
  const json fleet = c.get("/api/v1/agents?state=all&limit=1000");
  for (const auto& a : fleet["agents"])
    if (a["id"] == job["runs"].back()["agent_id"]) return a;
  return json::object();
}

std::string agent_field(Cluster& c, const json& job, const char* field) {
  const json fleet = c.get("/api/v1/agents?state=all&limit=1000");  // outlives the loop; retired too
  for (const auto& a : fleet["agents"])
    if (a["id"] == job["runs"].back()["agent_id"]) return a[field];
  return "";
}

TEST(GceFallback, OneKfleetdServesComputeEngineZonesAndAnotherCloudsRegion) {
  FakeGce gce;
  gce.set_behaviour("us-central1-a", ZoneBehaviour::stockout);
  const std::string cfg_dir = make_temp_dir("kfleet-gce-multi");
  const json multi = {
      {"provisioners",
       {{{"kind", "gce"},
         {"config",
          {{"project", "kfleet-e2e"},
           {"zones", {"us-central1-a", "southamerica-east1-c", "us-west1-b", "us-east4-a", "europe-west4-a"}},
           {"owner", "perf-team"},
           {"cost_center", "cc-1234"},
           {"enrol_token", "startup-script-token-0123"},  // what the script would carry
           {"api_endpoint", gce.endpoint()},
           {"token_url", gce.metadata_token_url()},  // no key file: the metadata server
           {"poll_interval_ms", 20},
           {"prices", {{"g2-standard-4", 0.7068}}}}}},
        {{"kind", "simulated"},
         {"config",
          {{"regions", {{{"name", "us-east-1"}, {"gpu", "L4"}, {"arch", "sm_89"}, {"capacity", 1}}}}}}},
        {{"kind", "static"}}}}};
  write_file(cfg_dir + "/multi.json", multi.dump(2));
  ClusterOptions o;
  o.provisioner = "multi";
  o.extra_args = {"--multi-config", cfg_dir + "/multi.json"};
  Cluster run(o);
  run.start_kfleetd();

  // Seed 001's zone list: us-central1-a is out, the job gets an instance in southamerica-east1-c.
  const auto id = run.submit_api(run.write_job("seed", Cluster::sim_job_yaml("gce/seed-001", "L4", kSeedZones)));
  json ok;
  ASSERT_TRUE(wait_until(
      [&] {
        for (auto& e : run.job_events(id))
          if (e["type"] == "capacity" && e["data"]["outcome"] == "ok") return ok = e, true;
        return false;
      },
      std::chrono::seconds(30)))
      << run.job(id).dump(2) << run.logs();
  EXPECT_EQ(ok["data"]["region"], "southamerica-east1-c");
  EXPECT_EQ(ok["data"]["provider"], "gce");
  const std::string instance = ok["data"]["instance_ids"][0];
  EXPECT_EQ(gce.inserts("us-central1-a"), 1);
  EXPECT_EQ(gce.inserts("us-west1-b"), 0);
  const json fleet = run.get("/api/v1/agents");
  bool zone_block = false;
  for (const auto& b : fleet["blocks"])
    if (b["region"] == "us-central1-a" && b["kind"] == "stockout") zone_block = true;
  EXPECT_TRUE(zone_block) << fleet.dump(2);

  // The instance boots with an enrolment token of its own in its startup script, never the
  // fleet's: kfleetd minted it for this instance (one use per GPU, bound to its name).
  std::string script;
  for (const auto& i : gce.instances())
    if (i.name == instance) script = i.body["metadata"]["items"][0]["value"];
  const std::string open_tag = "cat > /etc/kfleet/enrol.token <<'TOKEN'\n";
  const auto at = script.find(open_tag);
  ASSERT_NE(at, std::string::npos) << script;
  const std::string token =
      script.substr(at + open_tag.size(), script.find('\n', at + open_tag.size()) - at - open_tag.size());
  EXPECT_EQ(token.rfind("kfe_", 0), 0u) << token;
  EXPECT_EQ(script.find(Cluster::kEnrolToken), std::string::npos)
      << "the fleet's long-lived token reached an instance's metadata";
  std::filesystem::create_directories(run.dir() + "/instance");
  const std::string token_file = run.dir() + "/instance/enrol.token";
  write_file(token_file, token + "\n");
  ::chmod(token_file.c_str(), 0600);

  // Its agent enrols with that token, the zone as its region, and runs the job.
  run.start_agent("gce-agent", "southamerica-east1-c", "L4", "sm_89",
                  {"--provider", "gce", "--instance-id", instance, "--enrol-token-file", token_file});
  auto j = run.wait_terminal(id, 60000);
  EXPECT_EQ(j["job"]["state"], "passed") << run.logs();
  EXPECT_EQ(agent_field(run, j, "region"), "southamerica-east1-c");
  EXPECT_EQ(agent_field(run, j, "instance_id"), instance);
  const json by = agent_of(run, j)["enrolled_by"];
  EXPECT_EQ(by["kind"], "enrol_token") << by.dump();
  EXPECT_EQ(by["name"], "instance " + instance) << by.dump();
  EXPECT_EQ(by["minted_by"], "kfleetd") << by.dump();
  // Used up: another agent claiming to be this instance gets no second enrolment.
  Proc& copy = run.start_agent("gce-copy", "southamerica-east1-c", "L4", "sm_89",
                               {"--provider", "gce", "--instance-id", instance,
                                "--enrol-token-file", token_file});
  EXPECT_EQ(copy.wait(30000), 1) << copy.log();
  EXPECT_NE(copy.log().find("is used up (1 of 1 enrolments)"), std::string::npos) << copy.log();
  bool costed = false;
  for (auto& e : run.job_events(id))
    if (e["type"] == "cost" && e["data"]["usd_per_hour"] == 0.7068) costed = true;
  EXPECT_TRUE(costed) << "no instance-hour cost at the g2-standard-4 price";

  // A job for the other cloud's region goes to that provisioner, which starts its own agent.
  const auto aws = run.submit_api(run.write_job("aws", Cluster::sim_job_yaml("gce/aws-side", "L4", "us-east-1")));
  auto ja = run.wait_terminal(aws, 60000);
  EXPECT_EQ(ja["job"]["state"], "passed") << run.logs();
  EXPECT_EQ(agent_field(run, ja, "region"), "us-east-1");
  for (auto& e : run.job_events(aws))
    if (e["type"] == "capacity") {
      EXPECT_EQ(e["data"]["provider"], "simulated") << e.dump();
    }
  EXPECT_EQ(gce.instances().size(), 1u) << "the AWS-side job must not reach Compute Engine";
  for (const auto& p : gce.problems()) ADD_FAILURE() << "fake Compute Engine: " << p;
  std::filesystem::remove_all(cfg_dir);
}

}  // namespace
}  // namespace kfleet::e2e
