// The gce provisioner against the fake Compute Engine: the shape of every request (machine
// type, scheduling, metadata, labels, bearer token), operations polled until DONE, and each
// error body turned into the outcome the control plane acts on.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "fake_gce.hpp"
#include "kfleet/provision_gce/gce_provisioner.hpp"

namespace kfleet::provision {
namespace {

using nlohmann::json;
using testing::FakeGce;
using testing::ZoneBehaviour;

class GceProvisionerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GceConfig c;
    c.project = "kfleet-test";
    c.zones = {"us-central1-a", "southamerica-east1-c", "us-west1-b", "us-east4-a", "europe-west4-a"};
    c.owner = "perf-team";
    c.cost_center = "cc-1234";
    c.server_url = "https://kfleet.example.com";
    c.enrol_token = "enrol-0123456789abcdef";
    c.image_family = "common-cu124-ubuntu-2204";
    c.labels = {{"owner", "someone-else"}, {"team", "kernels"}};
    c.api_endpoint = fake_.endpoint();
    c.token_url = fake_.metadata_token_url();  // the metadata server path; the JWT path is in kfleetd_gce_gtest
    c.poll_interval = std::chrono::milliseconds(20);
    c.retry_base = std::chrono::milliseconds(20);
    c.capacity_budget = 3;
    c.prices = {{"g2-standard-4", 0.7068}};
    configure(c);
    auto p = make_gce_provisioner(c, io_.get_executor(), std::make_shared<SystemClock>());
    ASSERT_TRUE(p.ok()) << p.error().message;
    prov_ = std::move(*p);
  }
  virtual void configure(GceConfig&) {}
  void TearDown() override {
    if (prov_) prov_->shutdown();
    for (const auto& p : fake_.problems()) ADD_FAILURE() << "fake GCE: " << p;
  }

  CapacityResult ask(const std::string& zone, const std::string& gpu = "L4") {
    std::optional<CapacityResult> got;
    prov_->request(CapacityRequest{7, zone, gpu}, [&](CapacityResult r) { got = std::move(r); });
    run_until([&] { return got.has_value(); });
    return got.value_or(CapacityResult{Outcome::fatal, "no answer within the test's wait", {}, 0, {}});
  }
  Result<void> release(const std::string& id) {
    std::optional<Result<void>> got;
    prov_->release(id, [&](Result<void> r) { got = std::move(r); });
    run_until([&] { return got.has_value(); });
    return got.value_or(Result<void>(make_error(Errc::internal, "no answer within the test's wait")));
  }
  template <class Pred>
  void run_until(Pred done) {
    auto guard = boost::asio::make_work_guard(io_);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done() && std::chrono::steady_clock::now() < until) {
      io_.restart();
      io_.run_for(std::chrono::milliseconds(20));
    }
  }
  std::vector<testing::FakeGceRequest> inserts() {
    std::vector<testing::FakeGceRequest> out;
    for (const auto& r : fake_.requests())
      if (r.method == "POST" && r.path.find("/instances") != std::string::npos) out.push_back(r);
    return out;
  }

  FakeGce fake_;
  boost::asio::io_context io_;
  std::unique_ptr<GceProvisioner> prov_;
};

TEST_F(GceProvisionerTest, InsertSendsTheInstanceGoogleNeedsAndPollsUntilDone) {
  fake_.set_polls_to_done(3);
  auto r = ask("southamerica-east1-c");
  ASSERT_EQ(r.outcome, Outcome::ok) << r.message;
  ASSERT_EQ(r.instance_ids.size(), 1u);
  const std::string name = r.instance_ids[0];
  EXPECT_EQ(name.rfind("kfleet-southamerica-east1-c-j7-", 0), 0u) << name;
  EXPECT_LE(name.size(), 63u);
  EXPECT_NE(r.message.find("g2-standard-4"), std::string::npos) << r.message;

  const auto ins = inserts();
  ASSERT_EQ(ins.size(), 1u);
  EXPECT_EQ(ins[0].path, "/compute/v1/projects/kfleet-test/zones/southamerica-east1-c/instances");
  EXPECT_NE(ins[0].query.find("requestId="), std::string::npos);
  EXPECT_EQ(ins[0].authorization, "Bearer ya29.fake-1");
  EXPECT_EQ(ins[0].content_type, "application/json");
  const json body = json::parse(ins[0].body);
  EXPECT_EQ(body["name"], name);
  EXPECT_EQ(body["machineType"], "zones/southamerica-east1-c/machineTypes/g2-standard-4");
  EXPECT_EQ(body["scheduling"]["onHostMaintenance"], "TERMINATE");
  EXPECT_EQ(body["scheduling"]["automaticRestart"], true);
  EXPECT_FALSE(body.contains("guestAccelerators")) << "G2 carries its L4 in the machine type";
  EXPECT_EQ(body["disks"][0]["initializeParams"]["sourceImage"],
            "projects/deeplearning-platform-release/global/images/family/common-cu124-ubuntu-2204");
  EXPECT_EQ(body["disks"][0]["boot"], true);
  EXPECT_EQ(body["disks"][0]["autoDelete"], true);
  ASSERT_EQ(body["metadata"]["items"].size(), 1u);
  EXPECT_EQ(body["metadata"]["items"][0]["key"], "startup-script");
  const std::string script = body["metadata"]["items"][0]["value"];
  EXPECT_NE(script.find("KFLEET_REGION=southamerica-east1-c\n"), std::string::npos) << script;
  EXPECT_NE(script.find("KFLEET_PROVIDER=gce\n"), std::string::npos);
  EXPECT_NE(script.find("systemctl enable --now \"kfleet-agent@$gpu.service\""), std::string::npos) << script;
  const json labels = body["labels"];
  EXPECT_EQ(labels["owner"], "perf-team") << "ownership labels win over extra labels";
  EXPECT_EQ(labels["cost-center"], "cc-1234");
  EXPECT_EQ(labels["team"], "kernels");
  EXPECT_EQ(labels["kfleet-zone"], "southamerica-east1-c");
  EXPECT_EQ(labels["kfleet-job"], "7");
  EXPECT_EQ(labels["managed-by"], "kfleetd");
  EXPECT_EQ(body["networkInterfaces"][0]["network"], "global/networks/default");

  // The operation was polled through PENDING and RUNNING to DONE.
  int polls = 0;
  for (const auto& q : fake_.requests())
    if (q.method == "GET" && q.path.find("/zones/southamerica-east1-c/operations/") != std::string::npos) {
      ++polls;
      EXPECT_EQ(q.authorization, "Bearer ya29.fake-1");
    }
  EXPECT_EQ(polls, 3);
  EXPECT_EQ(fake_.tokens_issued(), 1) << "the token is cached";
  EXPECT_EQ(prov_->instances().at(name), "southamerica-east1-c");
  EXPECT_EQ(prov_->usd_per_hour(name), 0.7068);

  // Released: instances.delete in its zone, polled to DONE.
  auto rel = release(name);
  ASSERT_TRUE(rel.ok()) << rel.error().message;
  EXPECT_EQ(fake_.deletes(), std::vector<std::string>{name});
  EXPECT_TRUE(prov_->instances().empty());
  auto again = release(name);  // already gone in Compute Engine (404): nothing left to do
  EXPECT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(fake_.deletes().size(), 2u);
  EXPECT_FALSE(release("i-0123456789abcdef0").ok()) << "not a name this provisioner gives";
}

TEST_F(GceProvisionerTest, EachErrorBodyBecomesItsOutcome) {
  fake_.set_behaviours({{"us-central1-a", ZoneBehaviour::stockout},
                        {"southamerica-east1-c", ZoneBehaviour::stockout_details},
                        {"us-west1-b", ZoneBehaviour::quota},
                        {"us-east4-a", ZoneBehaviour::unsupported},
                        {"europe-west4-a", ZoneBehaviour::forbidden}});

  auto s = ask("us-central1-a");
  EXPECT_EQ(s.outcome, Outcome::stockout) << s.message;
  EXPECT_EQ(s.message.rfind("ZONE_RESOURCE_POOL_EXHAUSTED: The zone", 0), 0u) << s.message;
  EXPECT_TRUE(s.block_region.empty());
  auto d = ask("southamerica-east1-c");
  EXPECT_EQ(d.outcome, Outcome::stockout) << d.message;
  auto q = ask("us-west1-b");
  EXPECT_EQ(q.outcome, Outcome::quota) << q.message;
  EXPECT_EQ(q.block_region, "us-west1");
  EXPECT_NE(q.message.find("Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 0.0 in region us-west1"), std::string::npos);
  auto u = ask("us-east4-a");
  EXPECT_EQ(u.outcome, Outcome::unsupported) << u.message;
  EXPECT_NE(u.message.find("does not exist in zone 'us-east4-a'"), std::string::npos);
  auto f = ask("europe-west4-a");
  EXPECT_EQ(f.outcome, Outcome::fatal) << f.message;
  EXPECT_NE(f.message.find("compute.instances.create"), std::string::npos) << f.message;
  EXPECT_TRUE(prov_->instances().empty());
  EXPECT_TRUE(fake_.instances().empty());

  auto other = ask("asia-east1-a");
  EXPECT_EQ(other.outcome, Outcome::unsupported);
  EXPECT_NE(other.message.find("us-central1-a"), std::string::npos) << other.message;
  auto gpu = ask("us-central1-a", "H100");
  EXPECT_EQ(gpu.outcome, Outcome::unsupported);
}

TEST_F(GceProvisionerTest, ThrottlingIsRetriedWithBackoff) {
  fake_.set_behaviour("us-east4-a", ZoneBehaviour::throttled_once);
  auto r = ask("us-east4-a");
  ASSERT_EQ(r.outcome, Outcome::ok) << r.message;
  EXPECT_EQ(fake_.inserts("us-east4-a"), 2);
  const auto ins = inserts();
  ASSERT_EQ(ins.size(), 2u);
  EXPECT_EQ(ins[0].query, ins[1].query) << "a retried insert keeps its requestId, so it cannot create twice";
}

TEST_F(GceProvisionerTest, ItsOwnBudgetIsAQuotaInKfleetsWords) {
  for (int i = 0; i < 3; ++i) ASSERT_EQ(ask("us-west1-b").outcome, Outcome::ok);
  auto r = ask("us-west1-b");
  EXPECT_EQ(r.outcome, Outcome::quota);
  EXPECT_NE(r.message.find("capacity_budget"), std::string::npos) << r.message;
  EXPECT_EQ(fake_.inserts("us-west1-b"), 3);
}

// Per-instance enrolment: kfleetd mints each instance its own token (bound to its name, one use
// per GPU), and only that token reaches the instance's metadata, never the fleet's.
class GcePerInstanceEnrolment : public GceProvisionerTest {
 protected:
  void configure(GceConfig& c) override {
    c.machine_type = "g2-standard-24";  // two L4s: two agents, two enrolments
    c.mint_enrol_token = [this](const std::string& instance, int uses) -> Result<std::string> {
      minted_.push_back({instance, uses});
      if (refuse_) return make_error(Errc::unavailable, "the store is read-only");
      return "kfe_minted-for-" + instance;
    };
  }
  std::vector<std::pair<std::string, int>> minted_;
  bool refuse_ = false;
};

TEST_F(GcePerInstanceEnrolment, EachInstanceBootsWithItsOwnTokenAndNeverTheFleets) {
  auto r = ask("us-central1-a");
  ASSERT_EQ(r.outcome, Outcome::ok) << r.message;
  const std::string name = r.instance_ids.at(0);
  ASSERT_EQ(minted_.size(), 1u);
  EXPECT_EQ(minted_[0].first, name) << "bound to the instance it was minted for";
  EXPECT_EQ(minted_[0].second, 2) << "one enrolment per GPU of g2-standard-24";
  const auto ins = inserts();
  ASSERT_EQ(ins.size(), 1u);
  const std::string script = json::parse(ins[0].body)["metadata"]["items"][0]["value"];
  EXPECT_NE(script.find("cat > /etc/kfleet/enrol.token <<'TOKEN'\nkfe_minted-for-" + name + "\nTOKEN\n"),
            std::string::npos)
      << script;
  EXPECT_EQ(script.find("enrol-0123456789abcdef"), std::string::npos)
      << "the fleet's long-lived token must not reach an instance's metadata";
  // Its agents say which instance they are, from the metadata server.
  EXPECT_NE(script.find("KFLEET_INSTANCE_ID=$instance_name\n"), std::string::npos) << script;
  // A second instance gets another token.
  auto second = ask("us-central1-a");
  ASSERT_EQ(second.outcome, Outcome::ok) << second.message;
  ASSERT_EQ(minted_.size(), 2u);
  EXPECT_EQ(minted_[1].first, second.instance_ids.at(0));
  EXPECT_NE(minted_[0].first, minted_[1].first);
}

TEST_F(GcePerInstanceEnrolment, NoTokenMeansNoInstanceAndTheReasonSaysWhy) {
  refuse_ = true;
  auto r = ask("us-central1-a");
  EXPECT_EQ(r.outcome, Outcome::fatal);
  EXPECT_NE(r.message.find("cannot mint an enrolment token"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("the store is read-only"), std::string::npos) << r.message;
  EXPECT_TRUE(inserts().empty()) << "no instance without its token";
  EXPECT_TRUE(prov_->instances().empty());
}

TEST(GceProvisionerConfig, AMissingKeyFileOrBadConfigIsRefusedBeforeAnyRequest) {
  boost::asio::io_context io;
  GceConfig c;
  c.project = "p";
  c.zones = {"us-central1-a"};
  c.owner = "o";
  c.cost_center = "c";
  c.server_url = "https://kfleet.example.com";
  c.enrol_token = "enrol-0123456789abcdef";
  c.credentials_file = "/nonexistent/key.json";
  auto p = make_gce_provisioner(c, io.get_executor(), std::make_shared<SystemClock>());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("/nonexistent/key.json"), std::string::npos) << p.error().message;
  c.credentials_file.clear();
  c.enrol_token.clear();
  p = make_gce_provisioner(c, io.get_executor(), std::make_shared<SystemClock>());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("enrol_token"), std::string::npos) << p.error().message;
}

}  // namespace
}  // namespace kfleet::provision
