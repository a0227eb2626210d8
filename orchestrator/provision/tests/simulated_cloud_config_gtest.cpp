// Reading the simulated cloud's JSON config, and the errors a user gets when it is wrong.
#include <gtest/gtest.h>

#include <fstream>

#include "provision_test_util.hpp"

namespace kfleet::provision {
namespace {

using testing::TempDir;

nlohmann::json valid() {
  return nlohmann::json::parse(R"({
    "agent_binary": "/usr/bin/kfleet-agent", "server_url": "http://127.0.0.1:8080",
    "enrol_token": "secret", "work_root": "/tmp/sim", "max_instances": 4,
    "regions": [
      {"name": "us-east-1", "gpu": "L4", "arch": "sm_89", "capacity": 2,
       "script": ["stockout", "ok"], "delay_ms": 250},
      {"name": "eu-west-1", "gpu": "H100", "arch": "sm_90a"}
    ]})");
}

TEST(SimulatedCloudConfig, LoadsAFile) {
  TempDir tmp;
  const auto path = tmp.path() / "cloud.json";
  std::ofstream(path) << valid().dump(2);
  auto c = load_simulated_cloud_config(path.string());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->agent_binary, "/usr/bin/kfleet-agent");
  EXPECT_EQ(c->server_url, "http://127.0.0.1:8080");
  EXPECT_EQ(c->enrol_token, "secret");
  EXPECT_EQ(c->work_root, "/tmp/sim");
  EXPECT_EQ(c->max_instances, 4);
  ASSERT_EQ(c->regions.size(), 2u);
  EXPECT_EQ(c->regions[0].capacity, 2);
  EXPECT_EQ(c->regions[0].delay_ms, 250);
  EXPECT_EQ(c->regions[0].script, (std::vector<std::string>{"stockout", "ok"}));
  EXPECT_EQ(c->regions[1].gpu, "H100");
  EXPECT_EQ(c->regions[1].arch, "sm_90a");
  EXPECT_EQ(c->regions[1].capacity, 1);
}

TEST(SimulatedCloudConfig, ErrorsNameTheField) {
  auto j = valid();
  j["regions"][0]["script"] = {"ok", "sometimes"};
  auto c = simulated_cloud_config_from_json(j);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("regions[0].script"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("sometimes"), std::string::npos);

  j = valid();
  j.erase("server_url");
  c = simulated_cloud_config_from_json(j);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("server_url"), std::string::npos);

  j = valid();
  j["regions"][1]["name"] = "us-east-1";
  c = simulated_cloud_config_from_json(j);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("listed twice"), std::string::npos);

  j = valid();
  j["regions"][0]["capacity"] = -1;
  EXPECT_FALSE(simulated_cloud_config_from_json(j).ok());

  // The CA goes into a file on the instance: a PEM certificate and nothing else.
  j = valid();
  j["server_ca_pem"] = "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n";
  c = simulated_cloud_config_from_json(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server_ca_pem, j["server_ca_pem"].get<std::string>());
  j["server_ca_pem"] = "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n$(reboot)\n";
  c = simulated_cloud_config_from_json(j);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("server_ca_pem"), std::string::npos) << c.error().message;
}

TEST(SimulatedCloudConfig, MissingOrBrokenFile) {
  TempDir tmp;
  EXPECT_EQ(load_simulated_cloud_config((tmp.path() / "none.json").string()).error().code,
            Errc::not_found);
  std::ofstream(tmp.path() / "bad.json") << "{ not json";
  auto c = load_simulated_cloud_config((tmp.path() / "bad.json").string());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace kfleet::provision
