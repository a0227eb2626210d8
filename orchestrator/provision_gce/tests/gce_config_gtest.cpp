// The gce config: what a user can get wrong is refused with what to fix; the startup script
// installs the terraform fleet's own unit and enrols with the zone as its region.
#include <fstream>

#include <gtest/gtest.h>

#include "kfleet/provision_gce/gce_provisioner.hpp"

namespace kfleet::provision {
namespace {

using nlohmann::json;

json minimal() {
  return {{"project", "kfleet-test"}, {"zones", {"us-central1-a", "southamerica-east1-c"}},
          {"owner", "perf-team"}, {"cost_center", "cc-1234"}};
}

TEST(GceConfig, DefaultsAreOneL4PerG2Standard4) {
  auto c = gce_config_from_json(minimal());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->machine_type, "g2-standard-4");
  EXPECT_EQ(c->gpu_class, "L4");
  EXPECT_EQ(c->api_endpoint, "https://compute.googleapis.com/compute/v1");
  EXPECT_FALSE(gce_config_problem(*c).has_value());
}

TEST(GceConfig, MistakesAreNamed) {
  auto expect_problem = [](json j, const std::string& words) {
    auto c = gce_config_from_json(j);
    if (!c.ok()) {
      EXPECT_NE(c.error().message.find(words), std::string::npos) << c.error().message;
      return;
    }
    auto p = gce_config_problem(*c);
    ASSERT_TRUE(p.has_value()) << j.dump();
    EXPECT_NE(p->find(words), std::string::npos) << *p;
  };
  auto j = minimal();
  j.erase("project");
  expect_problem(j, "project");
  j = minimal();
  j["zones"] = {"us-central1"};
  expect_problem(j, "us-central1");
  j = minimal();
  j["owner"] = "Perf Team";
  expect_problem(j, "labels");
  j = minimal();
  j["enrol_token"] = "short";
  expect_problem(j, "16 or more");
  j = minimal();
  j["server_url"] = "http://x/$(reboot)";
  expect_problem(j, "server_url");
  j = minimal();
  j["agent_download_url"] = "https://example.com/kfleet-agent";
  expect_problem(j, "agent_sha256");
  j = minimal();
  j["prices"] = {{"g2-standard-4", "cheap"}};
  expect_problem(j, "number");
}

TEST(GceConfig, TheStartupScriptInstallsTheFleetsUnitAndEnrolsWithTheZone) {
  auto c = gce_config_from_json(minimal());
  ASSERT_TRUE(c.ok());
  c->server_url = "https://kfleet.example.com";
  c->enrol_token = "enrol-0123456789abcdef";
  const std::string s = gce_startup_script(*c, "southamerica-east1-c");
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  for (const char* want : {"KFLEET_SERVER=https://kfleet.example.com\n", "KFLEET_REGION=southamerica-east1-c\n",
                           "KFLEET_PROVIDER=gce\n", "KFLEET_BACKEND=cuda\n", "KFLEET_ENROL_TOKEN=enrol-0123456789abcdef\n",
                           "chmod 0600 /etc/kfleet/agent.env", "Metadata-Flavor: Google",
                           "systemctl enable --now kfleet-agent.service"})
    EXPECT_NE(s.find(want), std::string::npos) << want << "\n" << s;
  // The unit is the terraform fleet's file, byte for byte (up to trailing newlines).
  std::ifstream in(std::string(KFLEET_SOURCE_DIR) + "/terraform/modules/l4-agents/files/kfleet-agent.service");
  std::string unit((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!unit.empty() && unit.back() == '\n') unit.pop_back();
  ASSERT_FALSE(unit.empty());
  EXPECT_NE(s.find("<<'UNIT'\n" + unit + "\nUNIT\n"), std::string::npos) << s;
}

}  // namespace
}  // namespace kfleet::provision

namespace kfleet::provision {
namespace {

TEST(GceConfig, TheDocumentedExampleIsAConfigKfleetdAccepts) {
  auto c = load_gce_config(std::string(KFLEET_SOURCE_DIR) + "/docs/examples/gce.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(gce_config_problem(*c).has_value()) << gce_config_problem(*c).value_or("");
  EXPECT_EQ(c->zones.front(), "us-central1-a");
  EXPECT_EQ(c->prices.at("g2-standard-4"), 0.7068);
}

}  // namespace
}  // namespace kfleet::provision
