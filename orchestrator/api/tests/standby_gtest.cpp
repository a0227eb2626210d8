// A standby's server (several kfleetd on one PostgreSQL) over a read-only control plane: for
// every route in the table, a GET that reads the store is served (/metrics as kfleet_leader 0
// alone), and everything else (writes, agent calls) is answered 503 with the leader's URL
// before any other check. After
// promote() the same socket leads. Here both control planes share one in-memory SQLite store;
// the PostgreSQL end-to-end test (tests/e2e/postgres_standby_gtest.cpp) runs real processes.
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "kfleet/api/server.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/http_client.hpp"
#include "served_api.hpp"

namespace {

using namespace kfleet;

using api::test::kAdmin;

class StandbyServer : public ::testing::Test {
 protected:
  void SetUp() override {
    core::Config cfg;
    cfg.admin_token = kAdmin;
    cfg.enrol_token = "enrol-secret";
    core::Config scfg = cfg;
    scfg.read_only = true;
    api::ServerOptions lo, so;
    lo.role = "leader";
    so.role = "standby";
    leader_ = std::make_unique<api::test::Served>(io_, *backing_.store, *backing_.prov, cfg, lo);
    standby_ = std::make_unique<api::test::Served>(io_, *backing_.store, *backing_.prov, scfg, so);
    leader_url_ = leader_->url;
    standby_url_ = standby_->url;
    standby_->server->set_leader(leader_url_, 7);
    leader_->cp->start();  // stores the admin token; the standby's is never started
    thread_.run();
  }

  nlohmann::json submit_body(const std::string& name) {
    return api::test::submit_body(api::test::job_yaml(name));
  }

  boost::asio::io_context io_;
  api::test::Backing backing_;
  std::unique_ptr<api::test::Served> leader_, standby_;
  std::string leader_url_, standby_url_;
  api::test::IoThread thread_{io_};  // last: stops the io before the rest goes
};

TEST_F(StandbyServer, ServesStoreReadsAndRedirectsEverythingElseForEveryRoute) {
  HttpClient admin_leader(leader_url_, kAdmin);
  auto sub = admin_leader.post_json("/api/v1/jobs", submit_body("one"));
  ASSERT_TRUE(sub.ok());
  ASSERT_EQ(sub->status, 201) << sub->body;
  const auto job_id = (*sub->json())["job"]["id"].get<std::int64_t>();

  int served = 0, redirected = 0;
  for (const auto& r : api::route_table()) {
    std::string path = r.path;
    for (const std::string p : {"{id}", "{hash}", "{name}"})
      if (auto at = path.find(p); at != std::string::npos)
        path.replace(at, p.size(), p == "{id}" ? std::to_string(job_id) : "x");
    HttpClient c(standby_url_, kAdmin);
    auto res = c.request(r.method, path, r.method == "GET" ? "" : "{}", "application/json");
    ASSERT_TRUE(res.ok()) << r.method << " " << path;
    const bool agent = r.access == "agent" || r.access == "agent_run" || r.access == "enrol";
    const bool should_serve = r.method == "GET" && !agent;
    EXPECT_EQ(res->headers["x-kfleet-role"], "standby") << r.method << " " << path;
    if (should_serve) {
      ++served;
      EXPECT_NE(res->status, 503) << r.method << " " << path << ": " << res->body;
      EXPECT_LT(res->status, 500) << r.method << " " << path << ": " << res->body;
    } else {
      ++redirected;
      EXPECT_EQ(res->status, 503) << r.method << " " << path << ": " << res->body;
      EXPECT_EQ(res->headers["location"], leader_url_ + path);
      EXPECT_EQ(res->headers["retry-after"], "1");
      auto j = res->json();
      ASSERT_TRUE(j.ok());
      EXPECT_EQ((*j)["leader"], leader_url_);
      EXPECT_EQ((*j)["epoch"], 7);
      EXPECT_EQ((*j)["error"]["code"], "standby");
    }
  }
  EXPECT_GT(served, 15);
  EXPECT_GT(redirected, 10);
  // Its /metrics says it does not lead, and nothing else; the leader's says it does.
  auto ms = HttpClient(standby_url_, kAdmin).get("/metrics");
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(ms->status, 200) << ms->body;
  EXPECT_EQ(ms->body,
            "# HELP kfleet_leader 1 on the kfleetd that schedules (the leader, or the only one), 0 "
            "on a standby (which exports nothing else).\n# TYPE kfleet_leader gauge\n"
            "kfleet_leader 0\n");
  auto ml = admin_leader.get("/metrics");
  ASSERT_TRUE(ml.ok());
  EXPECT_NE(ml->body.find("\nkfleet_leader 1\n"), std::string::npos) << ml->body;
  // The one job submitted above waits, queued or for capacity: the leader counts its queue.
  auto gauge = [&](const std::string& name) -> long {
    const auto at = ml->body.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::stol(ml->body.substr(at + name.size() + 2));
  };
  EXPECT_EQ(gauge("kfleet_queue_depth{state=\"queued\"}") +
                gauge("kfleet_queue_depth{state=\"waiting_capacity\"}"),
            1)
      << ml->body;
  // A write to an unknown path, and a method no route has, go to the leader too.
  auto odd = HttpClient(standby_url_, kAdmin).request("PUT", "/api/v1/nothing", "{}",
                                                      "application/json");
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->status, 503);
  // The dashboards are served.
  auto page = HttpClient(standby_url_).get("/");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->headers["x-kfleet-role"], "standby");

  // Same bodies from both; the leader says so in its header.
  HttpClient admin_standby(standby_url_, kAdmin);
  for (const std::string& p : std::vector<std::string>{"/api/v1/jobs", "/api/v1/jobs/" + std::to_string(job_id),
                              "/api/v1/jobs/" + std::to_string(job_id) + "/events",
                              "/api/v1/tokens", "/api/v1/audit"}) {
    auto l = admin_leader.get(p);
    auto s = admin_standby.get(p);
    ASSERT_TRUE(l.ok() && s.ok());
    EXPECT_EQ(l->status, 200) << p;
    EXPECT_EQ(s->body, l->body) << p;
    EXPECT_EQ(l->headers["x-kfleet-role"], "leader");
  }
}

TEST_F(StandbyServer, ARevokedTokenIsRefusedAtOnceAndPromoteLeadsOnTheSameSocket) {
  HttpClient admin_leader(leader_url_, kAdmin);
  auto made = admin_leader.post_json("/api/v1/tokens", {{"user", "bob"}, {"scope", "read"}});
  ASSERT_TRUE(made.ok());
  ASSERT_EQ(made->status, 201) << made->body;
  const std::string bob = (*made->json())["token"]["token"];
  const auto bob_id = (*made->json())["token"]["id"].get<std::int64_t>();
  HttpClient bob_standby(standby_url_, bob);
  EXPECT_EQ(bob_standby.get("/api/v1/jobs")->status, 200);
  EXPECT_EQ(bob_standby.get("/api/v1/tokens")->status, 403);
  auto rv = admin_leader.post_json("/api/v1/tokens/" + std::to_string(bob_id) + "/revoke",
                                   nlohmann::json::object());
  ASSERT_TRUE(rv.ok());
  ASSERT_EQ(rv->status, 200) << rv->body;
  EXPECT_EQ(bob_standby.get("/api/v1/jobs")->status, 401) << "the standby cached the token";

  // An agent's token: found in the store by the standby, refused on user calls as on the
  // leader; a retired agent's token is unknown to both.
  auto en = HttpClient(leader_url_, "enrol-secret")
                .post_json("/api/v1/agents/enrol",
                           {{"name", "a"}, {"region", "r"}, {"backend", "simulated"},
                            {"gpus", {{{"gpu_class", "T4"}, {"arch", "sm_75"}}}}});
  ASSERT_TRUE(en.ok());
  ASSERT_EQ(en->status, 201) << en->body;
  const std::string agent = (*en->json())["token"];
  const auto agent_id = (*en->json())["agent_id"].get<std::int64_t>();
  EXPECT_EQ(HttpClient(standby_url_, agent).get("/api/v1/jobs")->status, 403);
  ASSERT_EQ(admin_leader.post_json("/api/v1/agents/" + std::to_string(agent_id) + "/retire",
                                   nlohmann::json::object())->status, 200);
  EXPECT_EQ(HttpClient(standby_url_, agent).get("/api/v1/jobs")->status, 401);
  EXPECT_EQ(HttpClient(leader_url_, agent).get("/api/v1/jobs")->status, 401);

  // Promoted: the standby's socket now leads.
  boost::asio::post(io_, [this] { standby_->server->promote(*leader_->cp); });
  HttpClient admin_promoted(standby_url_, kAdmin);
  for (int i = 0; i < 100; ++i) {
    auto r = admin_promoted.get("/api/v1/whoami");
    if (r.ok() && r->headers["x-kfleet-role"] == "leader") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto sub = admin_promoted.post_json("/api/v1/jobs", submit_body("after"));
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(sub->status, 201) << sub->body;
  EXPECT_EQ(sub->headers["x-kfleet-role"], "leader");
}

}  // namespace
