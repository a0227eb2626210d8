#include <boost/asio/io_context.hpp>
#include <fstream>
#include <gtest/gtest.h>
#include <optional>
#include <unistd.h>

#include "kfleet/provision/terraform.hpp"
#include "kfleet/provision_terraform/terraform_provisioner.hpp"
#include "../src/region_workdir.hpp"

namespace kfleet::provision {
namespace {

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::ofstream(p) << text;
  return p;
}

TEST(TerraformConfigFile, ReadsEveryField) {
  auto prices = write_temp("prices.json", R"({"g6.xlarge": 0.8048})");
  auto file = write_temp("tf.json", R"({"terraform_dir": "/opt/kfleet/terraform", "state_root": "/var/lib/kfleet/tf",
      "regions": ["us-east-1", "us-west-2a"], "owner": "perf", "cost_center": "cc-1", "capacity_budget": 3,
      "aws_max_retries": 0, "vars": {"ami_id": "ami-0123456789abcdef0"}, "env": {"AWS_PROFILE": "kfleet"},
      "price_table": ")" + prices.string() + R"("})");
  auto c = load_terraform_config(file);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->regions, (std::vector<std::string>{"us-east-1", "us-west-2a"}));
  EXPECT_EQ(c->capacity_budget, 3);
  EXPECT_EQ(c->aws_max_retries, 0);
  EXPECT_EQ(c->vars.at("ami_id"), "ami-0123456789abcdef0");
  EXPECT_EQ(c->env.at("AWS_PROFILE"), "kfleet");
  ASSERT_TRUE(c->prices.has_value());
  EXPECT_NEAR(*c->prices->cost_usd("g6.xlarge", 3600), 0.8048, 1e-12);
  std::filesystem::remove(file);
  std::filesystem::remove(prices);
}

TEST(TerraformConfigFile, NamesTheMissingKey) {
  auto file = write_temp("tf-bad.json", R"({"terraform_dir": "/x", "state_root": "/y", "owner": "o", "cost_center": "c"})");
  auto c = load_terraform_config(file);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("regions"), std::string::npos) << c.error().message;
  std::filesystem::remove(file);
}

TEST(TerraformConfigFile, AnUnrunnableConfigAnswersFatalWithTheReason) {
  boost::asio::io_context io;
  TerraformConfig c;
  c.terraform_dir = "/nonexistent";
  c.regions = {"us-east-1"};
  auto p = make_terraform_provisioner(io.get_executor(), c);
  EXPECT_FALSE(p->can_grow());
  std::optional<CapacityResult> got;
  p->request(CapacityRequest{1, "us-east-1", "L4"}, [&](CapacityResult r) { got = r; });
  io.run();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->outcome, Outcome::fatal);
  EXPECT_NE(got->message.find("fleet/main.tf"), std::string::npos);
}

TEST(TerraformConfigFile, AnEnrolmentTokenTheModuleWouldRefuseIsRefusedAtStart) {
  EXPECT_EQ(enrol_token_problem("0123456789abcdef"), std::nullopt);
  EXPECT_EQ(enrol_token_problem("tok._~+/=-0123456789"), std::nullopt);
  EXPECT_EQ(enrol_token_problem("tf-enrol"), "is 8 characters; it must be at least 16");
  EXPECT_EQ(enrol_token_problem("0123456789abcdef ok"), "holds ' ', outside [A-Za-z0-9._~+/=-]");

  boost::asio::io_context io;
  TerraformConfig c;
  c.terraform_binary = "/bin/true";  // only its presence is checked before the token
  c.terraform_dir = std::filesystem::path(KFLEET_SOURCE_DIR) / "terraform";
  c.regions = {"us-east-1"};
  c.server_url = "http://kfleetd.example:8470";
  c.owner = "perf";
  c.cost_center = "cc-1";
  c.enrol_token = "short-token";
  auto p = make_terraform_provisioner(c, io.get_executor(), nullptr);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "terraform provisioner: the enrolment token is 11 characters; it must be at least 16; "
            "cloud agents could not enrol with it. Pass a --enrol-token-file (or KFLEET_ENROL_TOKEN) of 16 or more characters "
            "of [A-Za-z0-9._~+/=-] (e.g. openssl rand -hex 24)");
}

// The enrolment token and the CA that signed kfleetd's certificate reach terraform through its
// environment (TF_VAR_*), never its argv; the module writes both to 0600 files on the instance.
TEST(TerraformRegionWorkdir, SecretsAndTheCaGoThroughTheEnvironmentNotArgv) {
  TerraformConfig c;
  c.state_root = std::filesystem::temp_directory_path();
  c.server_url = "https://kfleet.example.com";
  c.enrol_token = "kfe_secret-0123456789abcdef";
  c.server_ca_pem = "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n";
  c.owner = "team";
  c.cost_center = "cc";
  RegionWorkdir w(c, "us-east-1");
  const auto env = w.environment();
  EXPECT_EQ(env.at("TF_VAR_enrol_token"), c.enrol_token);
  EXPECT_EQ(env.at("TF_VAR_server_ca_pem"), c.server_ca_pem);
  for (const auto& a : w.var_args({"agent-00"})) {
    EXPECT_EQ(a.find("kfe_secret"), std::string::npos) << a;
    EXPECT_EQ(a.find("enrol_token"), std::string::npos) << a;
  }
  c.server_ca_pem.clear();
  EXPECT_EQ(RegionWorkdir(c, "us-east-1").environment().count("TF_VAR_server_ca_pem"), 0u)
      << "no CA: the module's default (the system's CAs)";
}

}  // namespace
}  // namespace kfleet::provision
