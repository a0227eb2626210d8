#pragma once
// What the tests that run the real terraform against the fake EC2 share: the check that
// terraform and the AWS provider mirror are installed (they fail without them, never skip), and
// the provisioner's settings for the fake.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fake_ec2.hpp"
#include "kfleet/provision_terraform/terraform_provisioner.hpp"
#include "kfleet/testing/temp_dir.hpp"

namespace kfleet::provision::testing {

inline void require_terraform() {
  ASSERT_EQ(std::system("terraform version >/dev/null 2>&1"), 0)
      << "terraform is not on PATH: this test needs the real terraform (scripts/install-deps.sh)";
  ASSERT_TRUE(std::filesystem::is_directory(std::filesystem::path(KFLEET_TF_PLUGIN_DIR) /
                                            "registry.terraform.io/hashicorp/aws"))
      << "no AWS provider under " << KFLEET_TF_PLUGIN_DIR << " (scripts/install-deps.sh installs it)";
}

// terraform/fleet for `regions` against `ec2` (offline, dummy credentials), its state under
// state_root, at most `budget` instances, agents enrolling with `enrol_token`.
inline TerraformConfig fake_ec2_config(const FakeEc2& ec2, const std::filesystem::path& state_root,
                                       std::vector<std::string> regions,
                                       const std::string& enrol_token, int budget) {
  TerraformConfig c;
  c.terraform_dir = KFLEET_TERRAFORM_DIR;
  c.state_root = state_root;
  c.plugin_dir = KFLEET_TF_PLUGIN_DIR;
  c.regions = std::move(regions);
  c.server_url = "https://kfleet.test.example";
  c.enrol_token = enrol_token;
  c.owner = "kfleet-tests";
  c.cost_center = "cc-test";
  c.capacity_budget = budget;
  c.aws_max_retries = 1;
  c.apply_budget_s = 240;
  c.vars = {{"offline", "true"}, {"ami_id", "ami-0123456789abcdef0"}};
  // The fake through the AWS SDK's own variable, as an operator's kfleetd would reach a private
  // endpoint: the fleet's provider block then has no endpoints block, which costs the provider
  // about 2 s of CPU every time it checks its configuration (terraform/fleet/main.tf).
  c.env = {{"AWS_ENDPOINT_URL_EC2", ec2.endpoint()},
           {"AWS_ACCESS_KEY_ID", "AKIAKFLEETTESTDUMMY0"},
           {"AWS_SECRET_ACCESS_KEY", "kfleet-test-dummy-secret"},
           {"AWS_EC2_METADATA_DISABLED", "true"}};
  return c;
}

}  // namespace kfleet::provision::testing
