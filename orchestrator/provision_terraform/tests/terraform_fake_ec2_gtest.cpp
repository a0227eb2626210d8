// The real terraform binary and AWS provider apply terraform/fleet against a fake EC2 on
// loopback: per region the provisioner's outcome must match what the cloud said, and release
// must terminate exactly the released agent. Fails, never skips, without terraform or the mirror.
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "fake_ec2.hpp"
#include "fake_ec2_terraform.hpp"
#include "kfleet/provision_terraform/aws_error.hpp"
#include "kfleet/provision_terraform/terraform_provisioner.hpp"

namespace kfleet::provision {
namespace {

namespace fs = std::filesystem;
using testing::FakeEc2;
using testing::RegionBehaviour;

constexpr const char* kToken = "enrol-test-0123456789abcdef";

// Runs the control-plane loop until `ready` or the deadline; the provisioner posts results here.
// The work guard keeps run_one_for waiting for the next handler: without it an idle loop returns
// at once, and this would spin a core for the minutes terraform runs.
template <class Pred>
bool run_until(boost::asio::io_context& io, Pred ready, std::chrono::seconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  auto guard = boost::asio::make_work_guard(io);
  while (!ready() && std::chrono::steady_clock::now() < until) {
    io.restart();
    io.run_one_for(std::chrono::milliseconds(100));
  }
  return ready();
}

class TerraformAgainstFakeEc2 : public ::testing::Test {
 protected:
  void SetUp() override { testing::require_terraform(); }
  void TearDown() override { provisioner_.reset(); }

  void make(const std::vector<std::string>& regions, int budget = 4) {
    TerraformConfig c = testing::fake_ec2_config(ec2_, state_root_.path(), regions, kToken, budget);
    auto p = make_terraform_provisioner(std::move(c), io_.get_executor(), std::make_shared<SystemClock>());
    ASSERT_TRUE(p.ok()) << p.error().message;
    provisioner_ = std::move(p.value());
  }

  CapacityResult request(const std::string& region, std::int64_t job) {
    std::optional<CapacityResult> got;
    provisioner_->request(CapacityRequest{job, region, "L4"}, [&](CapacityResult r) { got = std::move(r); });
    EXPECT_TRUE(run_until(io_, [&] { return got.has_value(); }, std::chrono::seconds(900)))
        << "no answer for " << region;
    return got.value_or(CapacityResult{Outcome::fatal, "no answer", {}, 0});
  }

  Result<void> release(const std::string& id) {
    std::optional<Result<void>> got;
    provisioner_->release(id, [&](Result<void> r) { got = std::move(r); });
    EXPECT_TRUE(run_until(io_, [&] { return got.has_value(); }, std::chrono::seconds(900)));
    return got.value_or(Result<void>(make_error(Errc::internal, "no answer")));
  }

  std::string running_ids(const std::string& region) {
    std::string ids;
    for (const auto& i : ec2_.instances(region)) {
      if (i.state == "running") ids += i.id + " ";
    }
    return ids;
  }

  FakeEc2 ec2_;
  boost::asio::io_context io_;
  const kfleet::testing::TempDir state_root_{"kfleet-tf"};
  std::unique_ptr<TerraformProvisioner> provisioner_;
};

TEST_F(TerraformAgainstFakeEc2, EachRegionGetsTheOutcomeItsCloudReported) {
  ec2_.set_behaviours({{"us-east-1", RegionBehaviour::stockout},
                       {"us-east-2", RegionBehaviour::unsupported},
                       {"us-west-2", RegionBehaviour::quota},
                       {"eu-west-1", RegionBehaviour::auth},
                       {"ap-northeast-1", RegionBehaviour::capacity}});
  make({"us-east-1", "us-east-2", "us-west-2", "eu-west-1", "ap-northeast-1"});

  struct Expect {
    const char* region;
    Outcome outcome;
    const char* words;
  };
  const std::vector<Expect> failing = {
      {"us-east-1", Outcome::stockout, "InsufficientInstanceCapacity"},
      {"us-east-2", Outcome::unsupported, "is not supported in your requested"},
      {"us-west-2", Outcome::quota, "VcpuLimitExceeded"},
      {"eu-west-1", Outcome::fatal, "AuthFailure"}};
  // All at once: each region has its own working directory and state, so they run side by side.
  std::map<std::string, CapacityResult> results;
  for (const Expect& e : failing) {
    provisioner_->request(CapacityRequest{7, e.region, "L4"},
                          [&, region = std::string(e.region)](CapacityResult r) { results[region] = std::move(r); });
  }
  ASSERT_TRUE(run_until(io_, [&] { return results.size() == failing.size(); }, std::chrono::seconds(900)));
  for (const Expect& e : failing) {
    const CapacityResult& r = results.at(e.region);
    EXPECT_EQ(outcome_name(r.outcome), std::string(outcome_name(e.outcome))) << e.region << ": " << r.message;
    EXPECT_NE(r.message.find(e.words), std::string::npos) << e.region << ": " << r.message;
    EXPECT_TRUE(r.instance_ids.empty()) << e.region;
    EXPECT_GT(r.seconds, 0) << e.region;
    EXPECT_TRUE(ec2_.instances(e.region).empty()) << e.region;
  }
  // A stockout must come back quickly so the scheduler can fall back: the provider gives up
  // after aws_max_retries instead of retrying for minutes.
  EXPECT_GE(ec2_.run_instances_calls("us-east-1"), 1);
  EXPECT_LE(ec2_.run_instances_calls("us-east-1"), 2);
  EXPECT_LT(results.at("us-east-1").seconds, 240) << "the stockout ran into the apply budget";

  CapacityResult ok = request("ap-northeast-1", 7);
  ASSERT_EQ(ok.outcome, Outcome::ok) << ok.message;
  ASSERT_EQ(ok.instance_ids.size(), 1u);
  auto launched = ec2_.instances("ap-northeast-1");
  ASSERT_EQ(launched.size(), 1u);
  const auto& inst = launched.front();
  EXPECT_EQ(inst.id, ok.instance_ids.front());
  EXPECT_EQ(inst.instance_type, "g6.xlarge");
  EXPECT_EQ(inst.image_id, "ami-0123456789abcdef0");
  EXPECT_EQ(inst.tags.at("Project"), "kfleet");
  EXPECT_EQ(inst.tags.at("KfleetRegion"), "ap-northeast-1");
  EXPECT_EQ(inst.tags.at("Owner"), "kfleet-tests");
  EXPECT_EQ(inst.tags.at("CostCenter"), "cc-test");
  EXPECT_EQ(inst.tags.at("ManagedBy"), "terraform");
  EXPECT_NE(inst.user_data.find("KFLEET_SERVER=https://kfleet.test.example"), std::string::npos);
  // The token in its own 0600 file, read by the agent; never in agent.env (its environment).
  EXPECT_NE(inst.user_data.find("cat > /etc/kfleet/enrol.token <<'TOKEN'\n" + std::string(kToken) + "\nTOKEN\n"),
            std::string::npos);
  EXPECT_EQ(inst.user_data.find("KFLEET_ENROL_TOKEN"), std::string::npos);
  EXPECT_NE(inst.user_data.find("systemctl enable --now \"kfleet-agent@$gpu.service\""),
            std::string::npos);
  for (const auto& action : ec2_.unknown_actions()) ADD_FAILURE() << "the fake has no " << action;

  // Release terminates exactly the released agent.
  CapacityResult second = request("ap-northeast-1", 8);
  ASSERT_EQ(second.outcome, Outcome::ok) << second.message;
  ASSERT_EQ(second.instance_ids.size(), 1u);
  EXPECT_NE(second.instance_ids.front(), ok.instance_ids.front());
  EXPECT_EQ(provisioner_->instance_ids().size(), 2u);

  auto released = release(ok.instance_ids.front());
  ASSERT_TRUE(released.ok()) << released.error().message;
  EXPECT_EQ(running_ids("ap-northeast-1"), second.instance_ids.front() + " ");
  EXPECT_EQ(provisioner_->instance_ids(), second.instance_ids);

  auto unknown = release("i-0000000000000dead");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, Errc::not_found);

  std::optional<Result<void>> destroyed;
  provisioner_->release_region("ap-northeast-1", [&](Result<void> r) { destroyed = std::move(r); });
  ASSERT_TRUE(run_until(io_, [&] { return destroyed.has_value(); }, std::chrono::seconds(900)));
  ASSERT_TRUE(destroyed->ok()) << destroyed->error().message;
  EXPECT_EQ(running_ids("ap-northeast-1"), "");
  EXPECT_TRUE(provisioner_->instance_ids().empty());
}

// A connection that drops while the provider reads a new instance back (seen on a loaded
// machine: "use of closed network connection") loses the cloud's answer, not the capacity: the
// provisioner applies once more, and the region's outcome is the cloud's, ok, not "fatal" (which
// would stop provisioning everywhere).
TEST_F(TerraformAgainstFakeEc2, AnAnswerLostToADroppedConnectionIsAppliedOnceMore) {
  make({"ap-northeast-1"});
  ec2_.drop_answers("DescribeInstanceAttribute", 1);
  CapacityResult ok = request("ap-northeast-1", 3);
  ASSERT_EQ(ok.outcome, Outcome::ok) << ok.message;
  ASSERT_EQ(ok.instance_ids.size(), 1u);
  EXPECT_EQ(running_ids("ap-northeast-1"), ok.instance_ids.front() + " ");
  EXPECT_EQ(provisioner_->instance_ids(), ok.instance_ids);
}

TEST_F(TerraformAgainstFakeEc2, RefusesRegionsAndGpusItDoesNotOffer) {
  make({"us-east-1"});
  CapacityResult other_region = request("sa-east-1", 1);
  EXPECT_EQ(other_region.outcome, Outcome::unsupported);
  std::optional<CapacityResult> got;
  provisioner_->request(CapacityRequest{1, "us-east-1", "gfx1151"}, [&](CapacityResult r) { got = r; });
  ASSERT_TRUE(run_until(io_, [&] { return got.has_value(); }, std::chrono::seconds(10)));
  EXPECT_EQ(got->outcome, Outcome::unsupported);
  EXPECT_EQ(ec2_.run_instances_calls("us-east-1"), 0);
}

TEST(TerraformProvisionerConfig, RejectsAConfigurationItCannotRun) {
  boost::asio::io_context io;
  TerraformConfig c;
  c.terraform_dir = "/nonexistent";
  c.regions = {"us-east-1"};
  auto p = make_terraform_provisioner(c, io.get_executor(), std::make_shared<SystemClock>());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("fleet/main.tf"), std::string::npos);
}

}  // namespace
}  // namespace kfleet::provision
