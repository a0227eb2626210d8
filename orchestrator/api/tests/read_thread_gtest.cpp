// The read thread (Server::serve_reads): a user's job list, one job and agent list are served
// while the control plane's thread is busy, on the read thread's own store connection; every
// other request still goes to the control plane's thread, on the same connection; and what the
// pages show of the leader's memory (last heard, lease expiry) and of who may read is the
// control plane's own.
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "kfleet/api/server.hpp"
#include "kfleet/common/http_client.hpp"
#include "kfleet/common/clock.hpp"
#include "served_api.hpp"

namespace read_thread_test {

using namespace kfleet;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using api::test::kAdmin;
constexpr const char* kEnrol = "enrol-secret-5b0d";

std::string temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "kfleet-reads-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

store::StorePtr open_store(const std::string& path) {
  auto st = store::open_sqlite_store({path, false});
  if (!st) throw std::runtime_error(st.error().message);
  return std::move(*st);
}

// A leader on a SQLite file whose users' pages are served on the read thread, reading a second
// connection to the file.
class ReadThread : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = open_store(dir_ + "/kfleet.db");
    core::Config cfg;
    cfg.admin_token = kAdmin;
    cfg.enrol_token = kEnrol;
    cfg.user_tokens = {"user-secret"};
    served_ = std::make_unique<api::test::Served>(io_, *store_, *prov_, cfg);
    served_->cp->start();
    served_->server->serve_reads(open_store(dir_ + "/kfleet.db"));
    thread_.run();
  }
  void TearDown() override {
    thread_.stop();
    served_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  // Holds the control plane's thread until release() (or 20 s): what it would serve waits.
  void block_control_thread() {
    auto started = std::make_shared<std::promise<void>>();
    auto held = started->get_future();
    boost::asio::post(io_, [this, started] {
      started->set_value();
      gate_.get_future().wait_for(20s);
      released_ = true;
    });
    held.wait();
  }
  void release() { gate_.set_value(); }

  std::string url() const { return served_->url; }

  std::string dir_ = temp_dir();
  boost::asio::io_context io_;
  store::StorePtr store_;
  provision::ProvisionerPtr prov_ = provision::make_static_provisioner();
  std::unique_ptr<api::test::Served> served_;
  std::promise<void> gate_;
  std::atomic<bool> released_{false};
  api::test::IoThread thread_{io_};
};

using api::test::enrol_body;
using api::test::job_body;

TEST_F(ReadThread, AUsersPagesAreServedWhileTheControlPlanesThreadIsBusy) {
  HttpClient user(url(), "user-secret");
  auto j = user.post_json("/api/v1/jobs", job_body("one"));
  ASSERT_EQ(j->status, 201) << j->body;
  const std::string job_path = "/api/v1/jobs/" + std::to_string((*j->json())["job"]["id"].get<int>());
  HttpClient enrol(url(), kEnrol);
  ASSERT_EQ(enrol.post_json("/api/v1/agents/enrol", enrol_body("a1"))->status, 201);

  // A connection's first request is read by the control plane's thread, which moves the
  // connection to the read thread; there it stays while it asks for pages.
  ASSERT_EQ(user.get("/api/v1/jobs")->status, 200);
  block_control_thread();
  // Each within its 5 s, the control plane's thread held throughout: not served by it.
  const auto t0 = std::chrono::steady_clock::now();
  auto jobs = user.get("/api/v1/jobs?limit=10", 5s);
  auto job = user.get(job_path, 5s);
  auto agents = user.get("/api/v1/agents", 5s);
  auto again = user.get("/api/v1/jobs?state=queued", 5s);
  const bool held_throughout = !released_;
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  release();
  EXPECT_TRUE(held_throughout) << "the pages waited for the control plane's thread";
  EXPECT_LT(took_s, 5.0);
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  ASSERT_TRUE(job.ok()) << job.error().message;
  ASSERT_TRUE(agents.ok()) << agents.error().message;
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(jobs->status, 200) << jobs->body;
  EXPECT_EQ((*jobs->json())["jobs"].size(), 1u) << jobs->body;
  EXPECT_EQ(job->status, 200) << job->body;
  EXPECT_EQ((*job->json())["job"]["name"], "one") << job->body;
  EXPECT_EQ(agents->status, 200) << agents->body;
  EXPECT_EQ((*agents->json())["agents"].size(), 1u) << agents->body;
  EXPECT_EQ(again->status, 200) << again->body;
}

TEST_F(ReadThread, EveryOtherRequestWaitsForTheControlPlanesThreadOnTheSameConnection) {
  HttpClient user(url(), "user-secret");
  ASSERT_EQ(user.get("/api/v1/jobs")->status, 200);  // on the read thread now
  block_control_thread();
  auto submit = std::async(std::launch::async, [&] {
    auto r = user.post_json("/api/v1/jobs", job_body("two"), 10s);
    return std::make_pair(std::move(r), released_.load());
  });
  EXPECT_EQ(submit.wait_for(300ms), std::future_status::timeout)
      << "a submit was answered while the control plane's thread was held";
  release();
  auto [r, after_release] = submit.get();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_TRUE(after_release);
  // Back and forth on one client: each page shows what the writes before it did.
  const auto id = (*r->json())["job"]["id"].get<std::int64_t>();
  auto page = user.get("/api/v1/jobs/" + std::to_string(id));
  ASSERT_EQ(page->status, 200) << page->body;
  EXPECT_EQ((*page->json())["job"]["state"], "queued") << page->body;
  ASSERT_EQ(user.post_json("/api/v1/jobs/" + std::to_string(id) + "/cancel",
                           nlohmann::json::object())->status, 200);
  page = user.get("/api/v1/jobs/" + std::to_string(id));
  EXPECT_EQ((*page->json())["job"]["state"], "cancelled") << page->body;
  EXPECT_EQ(user.get("/api/v1/whoami")->status, 200);
  EXPECT_EQ((*user.get("/api/v1/jobs?state=cancelled")->json())["jobs"].size(), 1u);
}

TEST_F(ReadThread, WhoMayReadIsTheControlPlanesWord) {
  HttpClient admin(url(), kAdmin);
  auto c = admin.post_json("/api/v1/tokens", {{"user", "rita"}, {"scope", "read"}});
  ASSERT_EQ(c->status, 201) << c->body;
  const std::string secret = (*c->json())["token"]["token"];
  HttpClient rita(url(), secret);
  ASSERT_EQ(rita.get("/api/v1/jobs")->status, 200);  // checked once by the control plane
  ASSERT_EQ(rita.get("/api/v1/agents")->status, 200);
  // Refused as before: no token, an unknown one, an agent's.
  EXPECT_EQ(HttpClient(url()).get("/api/v1/jobs")->status, 401);
  EXPECT_EQ(HttpClient(url(), "kft_nope").get("/api/v1/agents")->status, 401);
  HttpClient enrol(url(), kEnrol);
  auto e = *enrol.post_json("/api/v1/agents/enrol", enrol_body("a1"))->json();
  EXPECT_EQ(HttpClient(url(), e["token"].get<std::string>()).get("/api/v1/jobs")->status, 403);
  // Revoked: refused at once, on the connection that read a moment ago too.
  ASSERT_EQ(admin.post_json("/api/v1/tokens/" + std::to_string((*c->json())["token"]["id"].get<int>()) +
                                "/revoke",
                            nlohmann::json::object())->status, 200);
  EXPECT_EQ(rita.get("/api/v1/jobs")->status, 401);
  EXPECT_EQ(rita.get("/api/v1/jobs/1")->status, 401);
  EXPECT_EQ(HttpClient(url(), secret).get("/api/v1/agents")->status, 401);
}

TEST_F(ReadThread, APageShowsTheLeadersLastHeardAndLeaseExpiry) {
  HttpClient user(url(), "user-secret");
  ASSERT_EQ(user.post_json("/api/v1/jobs", job_body("held"))->status, 201);
  HttpClient enrol(url(), kEnrol);
  auto e = *enrol.post_json("/api/v1/agents/enrol", enrol_body("a1"))->json();
  const std::int64_t agent = e["agent_id"];
  HttpClient a(url(), e["token"].get<std::string>());
  auto lease = a.post_json("/api/v1/agents/" + std::to_string(agent) + "/lease?wait_ms=2000",
                           nlohmann::json::object());
  ASSERT_EQ(lease->status, 200) << lease->body;
  const auto offer = (*lease->json())["lease"];
  const std::int64_t run = offer["run_id"], fence = offer["fencing_token"], job = offer["job_id"];
  // The store as another connection reads it (the control plane's own is its thread's).
  store::StorePtr reader = open_store(dir_ + "/kfleet.db");
  std::this_thread::sleep_for(1100ms);  // a later millisecond than the store holds
  auto beat = a.post_json("/api/v1/agents/" + std::to_string(agent) + "/heartbeat",
                          {{"run_id", run}, {"fencing_token", fence}});
  ASSERT_EQ(beat->status, 200) << beat->body;
  const std::int64_t expires = (*beat->json())["lease_expires_ms"];
  // The heartbeat wrote neither; the pages have them from the leader's memory.
  const TimeMs stored_seen = reader->get_agent(agent)->last_seen_ms;
  const TimeMs stored_expires = reader->get_run(run)->lease_expires_ms;
  ASSERT_GT(expires, stored_expires);
  auto agents = user.get("/api/v1/agents");
  ASSERT_EQ(agents->status, 200) << agents->body;
  std::string shown_seen;
  const nlohmann::json shown = *agents->json();
  for (const auto& ag : shown["agents"])
    if (ag["id"] == agent) shown_seen = ag["last_seen"].get<std::string>();
  // ISO 8601 in UTC: ordered as text.
  EXPECT_GT(shown_seen, format_iso8601(stored_seen)) << agents->body;
  auto page = *user.get("/api/v1/jobs/" + std::to_string(job))->json();
  ASSERT_EQ(page["runs"].size(), 1u) << page.dump();
  EXPECT_EQ(page["runs"][0]["lease_expires"], format_iso8601(expires)) << page.dump();
}

}  // namespace read_thread_test
