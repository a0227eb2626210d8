#include <boost/asio/io_context.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
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

namespace kfleet::provision {
namespace {

// Per-slot enrolment: the provisioner mints the new slot its own token (one use per GPU of the
// instance type) on the caller's thread, and it reaches terraform as TF_VAR_enrol_tokens, in
// the environment, never in argv. A stand-in terraform records what `apply` was given.
TEST(TerraformPerSlotEnrolment, EachNewSlotsTokenReachesApplyThroughTheEnvironment) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("kfleet-tf-slot-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "tree" / "fleet");
  fs::create_directories(root / "tree" / "modules");
  std::ofstream(root / "tree" / "fleet" / "main.tf") << "# the stand-in terraform reads nothing\n";
  const fs::path fake = root / "terraform";
  std::ofstream(fake) << "#!/bin/sh\nif [ \"$1\" = apply ]; then /usr/bin/env > '" << (root / "apply.env").string()
                      << "'; printf '%s\\n' \"$@\" > '" << (root / "apply.argv").string() << "'; fi\nexit 0\n";
  std::filesystem::permissions(fake, fs::perms::owner_all);

  TerraformConfig c;
  c.terraform_dir = root / "tree";
  c.state_root = root / "state";
  c.terraform_binary = fake.string();
  c.regions = {"us-east-1"};
  c.server_url = "https://kfleet.example.com";
  c.enrol_token = "kfe_fleet-0123456789abcdef";
  c.owner = "team";
  c.cost_center = "cc";
  c.instance_type = "g6.12xlarge";  // four L4s: four agents, four enrolments
  std::vector<std::pair<std::string, int>> minted;
  c.mint_enrol_token = [&](const std::string& slot, int uses) -> Result<std::string> {
    minted.push_back({slot, uses});
    return "kfe_slot-" + slot;
  };
  boost::asio::io_context io;
  auto p = make_terraform_provisioner(std::move(c), io.get_executor(), std::make_shared<SystemClock>());
  ASSERT_TRUE(p.ok()) << p.error().message;
  std::optional<CapacityResult> got;
  (*p)->request(CapacityRequest{7, "us-east-1", "L4"}, [&](CapacityResult r) { got = std::move(r); });
  ASSERT_EQ(minted.size(), 1u) << "minted on the caller's thread, before terraform runs";
  EXPECT_EQ(minted[0].second, 4);
  const std::string slot = minted[0].first;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!got && std::chrono::steady_clock::now() < until) {
    io.restart();
    io.run_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(got.has_value());
  // The stand-in made no instance: the answer says so; what matters is what apply was given.
  std::ifstream env_in(root / "apply.env"), argv_in(root / "apply.argv");
  std::stringstream env, argv;
  env << env_in.rdbuf();
  argv << argv_in.rdbuf();
  EXPECT_NE(env.str().find("TF_VAR_enrol_tokens={\"" + slot + "\":\"kfe_slot-" + slot + "\"}"),
            std::string::npos)
      << env.str();
  EXPECT_NE(argv.str().find(slot), std::string::npos) << "the slot is in agent_slots: " << argv.str();
  EXPECT_EQ(argv.str().find("kfe_slot-"), std::string::npos) << "a token on argv: " << argv.str();
  (*p)->shutdown();
  fs::remove_all(root);
}

// No token, no instance: the request fails with the reason and terraform never runs.
TEST(TerraformPerSlotEnrolment, NoTokenMeansNoApplyAndTheReasonSaysWhy) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("kfleet-tf-notoken-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "tree" / "fleet");
  std::ofstream(root / "tree" / "fleet" / "main.tf") << "\n";
  const fs::path fake = root / "terraform";
  std::ofstream(fake) << "#!/bin/sh\n: > '" << (root / "ran").string() << "'\nexit 0\n";
  std::filesystem::permissions(fake, fs::perms::owner_all);
  TerraformConfig c;
  c.terraform_dir = root / "tree";
  c.state_root = root / "state";
  c.terraform_binary = fake.string();
  c.regions = {"us-east-1"};
  c.server_url = "https://kfleet.example.com";
  c.owner = "team";
  c.cost_center = "cc";
  c.mint_enrol_token = [](const std::string&, int) -> Result<std::string> {
    return make_error(Errc::unavailable, "the store is read-only");
  };
  boost::asio::io_context io;
  auto p = make_terraform_provisioner(std::move(c), io.get_executor(), std::make_shared<SystemClock>());
  ASSERT_TRUE(p.ok()) << p.error().message;
  std::optional<CapacityResult> got;
  (*p)->request(CapacityRequest{7, "us-east-1", "L4"}, [&](CapacityResult r) { got = std::move(r); });
  io.restart();
  io.run_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->outcome, Outcome::fatal);
  EXPECT_NE(got->message.find("cannot mint an enrolment token"), std::string::npos) << got->message;
  (*p)->shutdown();
  EXPECT_FALSE(fs::exists(root / "ran")) << "terraform ran for a slot without a token";
  fs::remove_all(root);
}

}  // namespace
}  // namespace kfleet::provision
