// Who may call what, in process: a real server on loopback, a real SQLite file, libcurl.
//  - the auth matrix, generated from openapi.yaml's x-kfleet-access: every route with no
//    token, a token of the wrong kind, one of too low a scope (or another agent's), and the
//    right one;
//  - per-user tokens: create (shown once), use, revoke; the user recorded; audit events;
//  - rate limits (429 + Retry-After); no secret in the SQLite file or in API answers;
//  - TLS with a CA and certificates made now by the openssl CLI, and mTLS for agents.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>
#include <boost/asio/io_context.hpp>

#include "kfleet/api/server.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/http_client.hpp"
#include "served_api.hpp"
#include "kfleet/common/sha256.hpp"
#include "kfleet/testing/files.hpp"

namespace {

using namespace kfleet;
namespace fs = std::filesystem;

using api::test::kAdmin;
constexpr const char* kEnrol = "enrol-secret-7c1e9b2a44d0";

std::string temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "kfleet-auth-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

class Fleet {
 public:
  // read_thread: the users' pages on the read thread (Server::serve_reads), as kfleetd serves.
  explicit Fleet(api::ServerOptions so = {}, bool https = false, bool read_thread = false)
      : dir_(temp_dir()) {
    auto st = store::open_sqlite_store({dir_ + "/kfleet.db", false});
    if (!st) throw std::runtime_error(st.error().message);
    store_ = std::move(*st);
    prov_ = provision::make_static_provisioner();
    core::Config cfg;
    cfg.admin_token = kAdmin;
    cfg.enrol_token = kEnrol;
    served_ = std::make_unique<api::test::Served>(io_, *store_, *prov_, cfg, so, https);
    served_->cp->start();
    if (read_thread) {
      auto reads = store::open_sqlite_store({dir_ + "/kfleet.db", false});
      if (!reads) throw std::runtime_error(reads.error().message);
      served_->server->serve_reads(std::move(*reads));
    }
    thread_.run();
  }
  ~Fleet() {
    thread_.stop();
    if (!::testing::Test::HasFailure()) fs::remove_all(dir_);
  }
  const std::string& url() const { return served_->url; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  boost::asio::io_context io_;
  store::StorePtr store_;
  provision::ProvisionerPtr prov_;
  std::unique_ptr<api::test::Served> served_;
  api::test::IoThread thread_{io_};
};

using api::test::enrol_body;
using api::test::job_body;

std::string make_token(const std::string& url, const std::string& user, const std::string& scope) {
  HttpClient admin(url, kAdmin);
  auto r = admin.post_json("/api/v1/tokens", {{"user", user}, {"scope", scope}});
  if (!r || r->status != 201) return "";
  return (*r->json())["token"]["token"].get<std::string>();
}

// Everything the matrix needs: tokens of each scope, two agents, one holding a run.
struct World {
  std::string read, submit, agent1, agent2;
  std::int64_t agent1_id = 0, agent2_id = 0, job_id = 0, run_id = 0;
  std::string bundle_hash;
};

World make_world(const std::string& url) {
  World w;
  w.read = make_token(url, "rita", "read");
  w.submit = make_token(url, "sam", "submit");
  HttpClient enrol(url, kEnrol);
  auto e1 = *enrol.post_json("/api/v1/agents/enrol", enrol_body("a1"))->json();
  auto e2 = *enrol.post_json("/api/v1/agents/enrol", enrol_body("a2"))->json();
  w.agent1 = e1["token"];
  w.agent1_id = e1["agent_id"];
  w.agent2 = e2["token"];
  w.agent2_id = e2["agent_id"];
  HttpClient sub(url, w.submit);
  auto j = *sub.post_json("/api/v1/jobs", job_body("m1"))->json();
  w.job_id = j["job"]["id"];
  w.bundle_hash = j["job"]["bundle_hash"];
  HttpClient a1(url, w.agent1);
  auto l = a1.post_json("/api/v1/agents/" + std::to_string(w.agent1_id) + "/lease?wait_ms=5000",
                        nlohmann::json::object());
  if (l && l->status == 200) w.run_id = (*l->json())["lease"]["run_id"];
  return w;
}

std::string fill(std::string path, const World& w, const std::string& access) {
  auto put = [&](const std::string& k, const std::string& v) {
    auto p = path.find(k);
    if (p != std::string::npos) path.replace(p, k.size(), v);
  };
  put("{hash}", w.bundle_hash);
  put("{name}", "nosuchcampaign");
  if (access == "agent") put("{id}", std::to_string(w.agent1_id));
  else if (path.rfind("/api/v1/runs/", 0) == 0) put("{id}", std::to_string(w.run_id));
  else if (path.find("/cancel") != std::string::npos || path.find("/tokens/") != std::string::npos ||
           path.find("/retire") != std::string::npos)
    put("{id}", "999999");  // a right-scope call must not cancel the job the matrix uses
  else put("{id}", std::to_string(w.job_id));
  return path;
}

void every_route_with_every_kind_of_token(bool read_thread) {
  api::ServerOptions so;
  so.auth_failures_per_minute = 0;  // the matrix fails on purpose, many times
  Fleet f(so, false, read_thread);
  const World w = make_world(f.url());
  ASSERT_FALSE(w.read.empty());
  ASSERT_FALSE(w.submit.empty());
  ASSERT_GT(w.run_id, 0);
  YAML::Node doc = YAML::LoadFile(std::string(KFLEET_SOURCE_DIR) + "/orchestrator/api/openapi.yaml");
  struct Cred {
    std::string name, token;
    int expect;  // 0: anything but 401/403/429
  };
  int routes = 0;
  for (const auto& p : doc["paths"]) {
    for (const auto& m : p.second) {
      const std::string method = m.first.as<std::string>();
      if (method == "parameters") continue;
      const std::string access = m.second["x-kfleet-access"].as<std::string>("");
      ASSERT_FALSE(access.empty()) << method << " " << p.first << " has no x-kfleet-access";
      const std::string path = fill(p.first.as<std::string>(), w, access);
      std::vector<Cred> creds;
      if (access == "open") {
        creds = {{"none", "", 0}};
      } else if (access == "read" || access == "metrics") {
        creds = {{"none", "", 401}, {"agent token", w.agent1, 403}, {"enrolment token", kEnrol, 403},
                 {"unknown", "kft_nope", 401}, {"read", w.read, 0}};
      } else if (access == "submit") {
        creds = {{"none", "", 401}, {"agent token", w.agent1, 403}, {"read", w.read, 403},
                 {"submit", w.submit, 0}, {"admin", kAdmin, 0}};
      } else if (access == "admin") {
        creds = {{"none", "", 401}, {"agent token", w.agent1, 403}, {"submit", w.submit, 403},
                 {"admin", kAdmin, 0}};
      } else if (access == "bundle") {
        creds = {{"none", "", 401}, {"enrolment token", kEnrol, 403},
                 {"another agent", w.agent2, 403}, {"read", w.read, 0}, {"its agent", w.agent1, 0}};
      } else if (access == "agent" || access == "agent_run") {
        creds = {{"none", "", 401}, {"user token", kAdmin, 403}, {"enrolment token", kEnrol, 403},
                 {"another agent", w.agent2, 403}, {"its agent", w.agent1, 0}};
      } else if (access == "enrol") {
        creds = {{"none", "", 401}, {"user token", kAdmin, 403}, {"agent token", w.agent1, 403},
                 {"enrolment token", kEnrol, 0}};
      } else {
        FAIL() << "unknown x-kfleet-access '" << access << "' on " << p.first;
      }
      ++routes;
      for (const auto& c : creds) {
        HttpClient h(f.url(), c.token);
        // On the read thread a token is checked once by the control plane, then there.
        const int rounds = read_thread && method == "get" ? 2 : 1;
        for (int round = 0; round < rounds; ++round) {
          auto r = method == "get" ? h.get(path)
                                   : h.request("POST", path + (path.find("/lease") != std::string::npos
                                                                   ? "?wait_ms=0" : ""),
                                               "{}", "application/json");
          ASSERT_TRUE(r.ok()) << r.error().message;
          const std::string what = method + " " + path + " with " + c.name + " (" + access + ")";
          if (c.expect) {
            EXPECT_EQ(r->status, c.expect) << what << ": " << r->body;
          } else {
            EXPECT_NE(r->status, 401) << what << ": " << r->body;
            EXPECT_NE(r->status, 403) << what << ": " << r->body;
            EXPECT_NE(r->status, 429) << what << ": " << r->body;
            EXPECT_LT(r->status, 500) << what << ": " << r->body;
          }
          if (r->status == 401) {
            EXPECT_EQ(r->headers["www-authenticate"].rfind("Bearer", 0), 0u) << what;
          }
        }
      }
    }
  }
  EXPECT_GE(routes, 28);
}

TEST(AuthMatrix, EveryRouteInOpenApiWithEveryKindOfToken) {
  every_route_with_every_kind_of_token(false);
}

// The same with the users' pages on the read thread, each token used twice (a connection
// moves there once the control plane has checked its token).
TEST(AuthMatrix, EveryRouteInOpenApiWithEveryKindOfTokenWithTheReadThread) {
  every_route_with_every_kind_of_token(true);
}

TEST(AuthMatrix, MetricsCanBeOpenedByConfiguration) {
  api::ServerOptions so;
  so.metrics_open = true;
  Fleet f(so);
  EXPECT_EQ(HttpClient(f.url()).get("/metrics")->status, 200);
  EXPECT_EQ(HttpClient(f.url()).get("/api/v1/jobs")->status, 401);
}

TEST(Tokens, CreateUseRevokeAndTheUserIsRecordedAndAudited) {
  Fleet f;
  HttpClient admin(f.url(), kAdmin);
  auto c = admin.post_json("/api/v1/tokens", {{"user", "alice"}, {"scope", "submit"}, {"note", "ci"}});
  ASSERT_EQ(c->status, 201) << c->body;
  const auto t = (*c->json())["token"];
  const std::string secret = t["token"];
  EXPECT_EQ(secret.rfind("kft_", 0), 0u);
  EXPECT_EQ(secret.size(), 4u + 64u);  // 256 random bits as hex
  EXPECT_EQ(t["user"], "alice");
  EXPECT_EQ(t["scope"], "submit");

  HttpClient alice(f.url(), secret);
  EXPECT_EQ((*alice.get("/api/v1/whoami")->json())["user"], "alice");
  auto j = alice.post_json("/api/v1/jobs", job_body("alices"));
  ASSERT_EQ(j->status, 201) << j->body;
  const auto job_id = (*j->json())["job"]["id"].get<std::int64_t>();
  EXPECT_EQ((*j->json())["job"]["submitted_by"], "alice");
  auto cancel = alice.post_json("/api/v1/jobs/" + std::to_string(job_id) + "/cancel",
                                nlohmann::json::object());
  ASSERT_EQ(cancel->status, 200) << cancel->body;
  EXPECT_NE((*cancel->json())["job"]["state_reason"].get<std::string>().find("alice"),
            std::string::npos);
  EXPECT_EQ((*cancel->json())["job"]["cancelled_by"], "alice");
  EXPECT_EQ((*j->json())["job"]["cancelled_by"], "");
  EXPECT_EQ((*alice.get("/api/v1/jobs/" + std::to_string(job_id))->json())["job"]["cancelled_by"],
            "alice");
  // alice may not make tokens.
  EXPECT_EQ(alice.post_json("/api/v1/tokens", {{"user", "eve"}, {"scope", "admin"}})->status, 403);

  // The list shows the token without its secret.
  auto list = admin.get("/api/v1/tokens");
  ASSERT_EQ(list->status, 200);
  EXPECT_EQ(list->body.find(secret), std::string::npos);
  EXPECT_NE(list->body.find("alice"), std::string::npos);

  ASSERT_EQ(admin.post_json("/api/v1/tokens/" + std::to_string(t["id"].get<int>()) + "/revoke",
                            nlohmann::json::object())->status, 200);
  EXPECT_EQ(alice.get("/api/v1/jobs")->status, 401);

  auto audit = *admin.get("/api/v1/audit")->json();
  std::set<std::string> actions;
  for (const auto& a : audit["audit"]) actions.insert(a["action"].get<std::string>() + " by " +
                                                      a["user"].get<std::string>());
  EXPECT_TRUE(actions.count("token.create by admin")) << audit.dump(2);
  EXPECT_TRUE(actions.count("token.revoke by admin")) << audit.dump(2);
  EXPECT_TRUE(actions.count("job.cancel by alice")) << audit.dump(2);
  EXPECT_EQ(audit.dump().find(secret), std::string::npos);

  // Bad requests say what to fix.
  auto bad = admin.post_json("/api/v1/tokens", {{"user", "bob"}, {"scope", "root"}});
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("read, submit or admin"), std::string::npos) << bad->body;
}

TEST(Tokens, NoSecretIsStoredOrAnswered) {
  Fleet f;
  const World w = make_world(f.url());
  HttpClient admin(f.url(), kAdmin);
  std::string answers;
  for (const char* p : {"/api/v1/jobs", "/api/v1/agents", "/api/v1/tokens", "/api/v1/audit",
                        "/api/v1/events", "/metrics", "/api/v1/results"})
    answers += admin.get(p)->body;
  std::string db;
  for (const auto& e : fs::directory_iterator(f.dir()))  // kfleet.db and its WAL
    db += kfleet::testing::read_file(e.path().string());
  ASSERT_GT(db.size(), 1000u);
  for (const std::string& secret : {std::string(kAdmin), std::string(kEnrol), w.read, w.submit,
                                    w.agent1, w.agent2}) {
    EXPECT_EQ(answers.find(secret), std::string::npos) << "an API answer holds a secret";
    EXPECT_EQ(db.find(secret), std::string::npos) << "the SQLite file holds a secret";
  }
  // What is stored is the hash.
  EXPECT_NE(db.find(sha256_hex(w.submit)), std::string::npos);
}

// The first admin token comes from the environment at every start, but is stored only when it is
// new: once revoked, a restart with the same KFLEET_ADMIN_TOKEN does not bring it back.
TEST(Tokens, ARevokedFirstAdminTokenStaysRevokedAcrossRestarts) {
  const std::string dir = temp_dir();
  boost::asio::io_context io;
  core::Config cfg;
  cfg.admin_token = kAdmin;
  auto start = [&](auto&& body) {
    auto st = store::open_sqlite_store({dir + "/kfleet.db", false});
    ASSERT_TRUE(st.ok()) << st.error().message;
    auto prov = provision::make_static_provisioner();
    core::ControlPlane cp(io.get_executor(), **st, std::make_shared<SystemClock>(), *prov, cfg);
    cp.start();  // a kfleetd start: stores the first admin token if it is new
    body(cp);
  };
  start([&](core::ControlPlane& cp) {
    auto p = cp.user_for_token(kAdmin);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->scope, core::Scope::admin);
    ASSERT_TRUE(cp.revoke_token(p->token_id, "test").ok());
    EXPECT_FALSE(cp.user_for_token(kAdmin).has_value());
  });
  start([&](core::ControlPlane& cp) {
    EXPECT_FALSE(cp.user_for_token(kAdmin).has_value()) << "a restart revived a revoked admin token";
    EXPECT_EQ(cp.store().list_tokens().size(), 1u) << "nor stored it again";
  });
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(Tokens, ARetiredAgentsTokenIsRefused) {
  Fleet f;
  HttpClient enrol(f.url(), kEnrol);
  auto e = *enrol.post_json("/api/v1/agents/enrol", enrol_body("stolen"))->json();
  const std::string hb = "/api/v1/agents/" + std::to_string(e["agent_id"].get<int>()) + "/heartbeat";
  HttpClient agent(f.url(), e["token"].get<std::string>());
  EXPECT_EQ(agent.post_json(hb, nlohmann::json::object())->status, 200);
  HttpClient admin(f.url(), kAdmin);
  auto r = admin.post_json("/api/v1/agents/" + std::to_string(e["agent_id"].get<int>()) + "/retire",
                           nlohmann::json::object());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ((*r->json())["agent"]["state"], "retired");
  EXPECT_EQ(agent.post_json(hb, nlohmann::json::object())->status, 401);
  EXPECT_NE(admin.get("/api/v1/audit")->body.find("agent.retire"), std::string::npos);
}

TEST(RateLimits, SubmissionsPerTokenAndFailedAuthenticationsGet429WithRetryAfter) {
  auto clock = std::make_shared<ManualClock>();
  api::ServerOptions so;
  so.submit_per_minute = 2;
  so.auth_failures_per_minute = 3;
  so.clock = clock;
  Fleet f(so);
  const std::string sam = make_token(f.url(), "sam", "submit");
  const std::string sue = make_token(f.url(), "sue", "submit");
  HttpClient s(f.url(), sam);
  EXPECT_EQ(s.post_json("/api/v1/jobs", job_body("r1"))->status, 201);
  EXPECT_EQ(s.post_json("/api/v1/jobs", job_body("r2"))->status, 201);
  auto r = s.post_json("/api/v1/jobs", job_body("r3"));
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(r->headers["retry-after"], "30");  // 2 a minute: the next in 30 s
  clock->advance_ms(29'000);
  EXPECT_EQ(s.post_json("/api/v1/jobs", job_body("r3"))->status, 429);
  clock->advance_ms(2'000);  // 31 s in all: one call's worth, and a little
  EXPECT_EQ(s.post_json("/api/v1/jobs", job_body("r3"))->status, 201);
  EXPECT_EQ(s.post_json("/api/v1/jobs", job_body("r3b"))->status, 429);
  // Per token: sue is not slowed down by sam.
  EXPECT_EQ(HttpClient(f.url(), sue).post_json("/api/v1/jobs", job_body("r4"))->status, 201);
  // Reads are not submissions.
  EXPECT_EQ(s.get("/api/v1/jobs")->status, 200);

  HttpClient bad(f.url(), "kft_guess");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bad.get("/api/v1/jobs")->status, 401);
  auto limited = bad.get("/api/v1/jobs");
  EXPECT_EQ(limited->status, 429);
  EXPECT_EQ(limited->headers["retry-after"], "20");
  // A long quiet spell refills the bucket to its burst, no more: 3 failures, then 429 again.
  clock->advance_ms(3'600'000);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bad.get("/api/v1/jobs")->status, 401);
  EXPECT_EQ(bad.get("/api/v1/jobs")->status, 429);
}

// --- TLS

class Certs {
 public:
  Certs() : dir_(temp_dir()) {
    const std::string cmd = std::string(KFLEET_SOURCE_DIR) + "/tests/support/make-test-certs.sh " + dir_;
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("make-test-certs.sh failed");
  }
  ~Certs() { fs::remove_all(dir_); }
  std::string operator()(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

TEST(Tls, ServesHttpsAndClientsVerifyTheCertificate) {
  ASSERT_TRUE(api::tls_available()) << "kfleetd was built without OpenSSL (libssl-dev)";
  Certs certs;
  api::ServerOptions so;
  so.tls_cert_file = certs("server.pem");
  so.tls_key_file = certs("server.key");
  Fleet f(so, true);
  HttpOptions good;
  good.ca_file = certs("ca.pem");
  auto ok = HttpClient(f.url(), kAdmin, good).get("/api/v1/jobs");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->status, 200);
  // An unknown CA (or the system's): refused, with a message that says what to pass.
  HttpOptions other;
  other.ca_file = certs("other-ca.pem");
  auto refused = HttpClient(f.url(), kAdmin, other).get("/api/v1/jobs");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("--ca-file"), std::string::npos) << refused.error().message;
  EXPECT_FALSE(HttpClient(f.url(), kAdmin).get("/api/v1/health").ok());
  // --insecure connects anyway (and the CLI and agent say so loudly).
  HttpOptions insecure;
  insecure.insecure = true;
  EXPECT_EQ(HttpClient(f.url(), kAdmin, insecure).get("/api/v1/health")->status, 200);
  // Plain HTTP to the TLS port gets nothing.
  std::string plain = f.url();
  plain.replace(0, 5, "http");
  auto p = HttpClient(plain).get("/api/v1/health");
  EXPECT_TRUE(!p.ok() || p->status != 200);
}

TEST(Tls, ARogueServerIsRefused) {
  Certs certs;
  api::ServerOptions so;
  so.tls_cert_file = certs("rogue.pem");  // right name, wrong CA
  so.tls_key_file = certs("rogue.key");
  Fleet f(so, true);
  HttpOptions o;
  o.ca_file = certs("ca.pem");
  auto r = HttpClient(f.url(), kEnrol, o).post_json("/api/v1/agents/enrol", enrol_body("a"));
  ASSERT_FALSE(r.ok());
}

TEST(Tls, AgentCallsNeedAClientCertificateWhenAClientCaIsSet) {
  Certs certs;
  api::ServerOptions so;
  so.tls_cert_file = certs("server.pem");
  so.tls_key_file = certs("server.key");
  so.tls_client_ca_file = certs("ca.pem");
  Fleet f(so, true);
  HttpOptions no_cert;
  no_cert.ca_file = certs("ca.pem");
  auto r = HttpClient(f.url(), kEnrol, no_cert).post_json("/api/v1/agents/enrol", enrol_body("a"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("client certificate"), std::string::npos) << r->body;
  // Users (CLI, browsers) need no certificate.
  EXPECT_EQ(HttpClient(f.url(), kAdmin, no_cert).get("/api/v1/jobs")->status, 200);
  HttpOptions with_cert = no_cert;
  with_cert.client_cert_file = certs("client.pem");
  with_cert.client_key_file = certs("client.key");
  auto e = HttpClient(f.url(), kEnrol, with_cert).post_json("/api/v1/agents/enrol", enrol_body("a"));
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->status, 201) << e->body;
  // A certificate from another CA fails the handshake.
  HttpOptions rogue = no_cert;
  rogue.client_cert_file = certs("rogue.pem");
  rogue.client_key_file = certs("rogue.key");
  auto x = HttpClient(f.url(), kEnrol, rogue).post_json("/api/v1/agents/enrol", enrol_body("b"));
  EXPECT_TRUE(!x.ok() || x->status == 403);
}

}  // namespace
