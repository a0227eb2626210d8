// The API in process: a real server on a loopback port, a real (in-memory) SQLite store, and
// the libcurl client. Bad input gets the right status and a clear message, nothing is stored,
// and the server keeps serving.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "../../../common/tests/shell_characters.hpp"
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "kfleet/api/server.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/http_client.hpp"
#include "served_api.hpp"

namespace {

using namespace kfleet;

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    core::Config cfg;
    cfg.user_tokens = {"user-secret"};
    cfg.enrol_token = "enrol-secret";
    api::ServerOptions so;
    so.max_body_bytes = 64 * 1024;
    served_ = std::make_unique<api::test::Served>(io_, *backing_.store, *backing_.prov, cfg, so);
    cp_ = served_->cp.get();
    url_ = served_->url;
    cp_->start();
    thread_.run();
  }

  static std::string good_yaml(const std::string& name) { return api::test::job_yaml(name); }
  static nlohmann::json submit_body(const std::string& yaml, const std::string& src = "k.cu") {
    return api::test::submit_body(yaml, src);
  }
  std::size_t job_count() {
    HttpClient c(url_, "user-secret");
    auto r = c.get("/api/v1/jobs");
    EXPECT_TRUE(r.ok());
    return (*r->json())["jobs"].size();
  }

  boost::asio::io_context io_;
  api::test::Backing backing_;
  std::unique_ptr<api::test::Served> served_;
  core::ControlPlane* cp_ = nullptr;
  std::string url_;
  api::test::IoThread thread_{io_};  // last: stops the io before the rest goes
};

TEST_F(ApiTest, HealthAnswers) {
  HttpClient c(url_);
  auto r = c.get("/api/v1/health");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ((*r->json())["status"], "ok");
  EXPECT_EQ((*r->json())["store"], "sqlite");
}

TEST_F(ApiTest, SubmitNeedsAUserToken) {
  HttpClient anon(url_);
  auto r = anon.post_json("/api/v1/jobs", submit_body(good_yaml("a")));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  EXPECT_NE(r->error_message().find("token"), std::string::npos) << r->body;
  HttpClient wrong(url_, "enrol-secret");  // an enrolment token is not a user token
  r = wrong.post_json("/api/v1/jobs", submit_body(good_yaml("a")));
  EXPECT_EQ(r->status, 403);
  HttpClient unknown(url_, "not-a-token");
  r = unknown.post_json("/api/v1/jobs", submit_body(good_yaml("a")));
  EXPECT_EQ(r->status, 401);
  HttpClient user(url_, "user-secret");
  r = user.post_json("/api/v1/jobs", submit_body(good_yaml("a")));
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(job_count(), 1u);
}

TEST_F(ApiTest, BadJobsAreRefusedWithTheirPlaceAndNothingIsStored) {
  HttpClient user(url_, "user-secret");
  struct Case { std::string yaml, where; };
  const std::vector<Case> cases = {
      {"name: x\ntarget: {gpu: L4\nkernel: [", "job.yaml:"},                   // syntax error
      {"name: x\npriority: high\n" + good_yaml("y").substr(8), "priority"},    // wrong type
      {good_yaml("x") + "colour: blue\n", "colour"},                           // unknown key
      {"target: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n",
       "name"},                                                                // missing field
      {"name: x\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: "
       "[../../etc/passwd]}\n", "sources"},                                    // escaping path
  };
  for (const auto& c : cases) {
    auto r = user.post_json("/api/v1/jobs", submit_body(c.yaml));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << c.yaml << "\n" << r->body;
    auto j = r->json();
    ASSERT_TRUE(j.ok());
    const std::string text = (*j).dump();
    EXPECT_NE(text.find(c.where), std::string::npos) << text;
    EXPECT_TRUE((*j)["error"]["details"].is_array()) << text;
    const auto& d = (*j)["error"]["details"][0];
    EXPECT_EQ(d["file"], "job.yaml");
    EXPECT_GT(d["line"].get<int>(), 0) << text;
  }
  EXPECT_EQ(job_count(), 0u);
  // The bundle itself may not smuggle an escaping path either.
  auto r = user.post_json("/api/v1/jobs", submit_body(good_yaml("z"), "../k.cu"));
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(job_count(), 0u);
  // And the server still serves.
  EXPECT_EQ(user.post_json("/api/v1/jobs", submit_body(good_yaml("ok")))->status, 201);
}

// A flag, define or entry that a shell would read in nvcc's build steps is refused at submit:
// 400 with the field, the value and the character, in YAML or in the job's JSON form (JSON is
// YAML: the same parser reads both), and nothing is stored.
TEST_F(ApiTest, ShellSyntaxInFlagsDefinesOrEntryIsRefused) {
  HttpClient user(url_, "user-secret");
  struct Case { std::string spec, field, message; };
  const std::string kernel = "name: x\ntarget: {gpu: L4}\nkernel:\n  family: attention\n"
                             "  language: cuda\n  sources: [k.cu]\n";
  const std::vector<Case> cases = {
      {kernel + "  defines: {TILE: \"64$(id)\"}\n", "kernel.defines.TILE",
       "invalid job: job.yaml:7:19: kernel.defines.TILE: '64$(id)' has U+0024 '$', which a shell "
       "expands, even inside double quotes; a define value may hold only ASCII letters, digits "
       "and _ @ % + = : . / - (nvcc runs its build steps through a shell)"},
      {kernel + "  flags: [-O3, \"-DX=`id`\"]\n", "kernel.flags[1]",
       "invalid job: job.yaml:7:16: kernel.flags[1]: '-DX=`id`' has U+0060 '`', which a shell runs "
       "as a command"},
      {kernel + "  entry: \"k;id\"\n", "kernel.entry",
       "invalid job: job.yaml:7:10: kernel.entry: 'k;id' is not a C identifier (it has U+003B ';', "
       "which is a shell operator)"},
      {R"({"name": "x", "target": {"gpu": "L4"}, "kernel": {"family": "attention",)"
       R"( "language": "cuda", "sources": ["k.cu"], "defines": {"N": "1|id"}}})",
       "kernel.defines.N", "kernel.defines.N: '1|id' has U+007C '|', which is a shell operator"},
  };
  for (const auto& c : cases) {
    auto r = user.post_json("/api/v1/jobs", submit_body(c.spec));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << c.spec << "\n" << r->body;
    EXPECT_NE(r->error_message().find(c.message), std::string::npos) << r->error_message();
    auto j = r->json();
    ASSERT_TRUE(j.ok());
    EXPECT_EQ((*j)["error"]["code"], "invalid_job") << r->body;
    EXPECT_EQ((*j)["error"]["details"][0]["field"], c.field) << r->body;
  }
  EXPECT_EQ(job_count(), 0u);
  auto ok = user.post_json("/api/v1/jobs", submit_body(kernel + "  entry: k\n  defines: {TILE: 64}\n"
                                                       "  flags: [-O3, -DX=a=b]\n" +
                                                       "simulate: {time_us: 50, stage_ms: 1}\n"));
  EXPECT_EQ(ok->status, 201) << ok->body;
}

// Every refused character, in a define's value, a flag and the entry: 400 naming the field and
// the character, nothing stored.
TEST_F(ApiTest, EveryShellCharacterIsRefusedAtSubmit) {
  HttpClient user(url_, "user-secret");
  const std::string kernel = "name: x\ntarget: {gpu: L4}\nkernel:\n  family: attention\n"
                             "  language: cuda\n  sources: [k.cu]\n";
  for (const auto& c : kfleet::testing::refused_shell_characters()) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {kernel + "  defines: {TILE: \"64" + c.yaml + "\"}\n", "kernel.defines.TILE"},
        {kernel + "  flags: [-O3, \"-DX=1" + c.yaml + "\"]\n", "kernel.flags[1]"},
        {kernel + "  entry: \"k" + c.yaml + "x\"\n", "kernel.entry"},
    };
    for (const auto& [spec, field] : cases) {
      auto r = user.post_json("/api/v1/jobs", submit_body(spec));
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->status, 400) << c.shown << "\n" << spec << r->body;
      EXPECT_NE(r->error_message().find(field + ": "), std::string::npos) << r->error_message();
      EXPECT_NE(r->error_message().find(c.shown), std::string::npos) << r->error_message();
    }
  }
  EXPECT_EQ(job_count(), 0u);
}

TEST_F(ApiTest, OversizedAndMalformedBodies) {
  HttpClient user(url_, "user-secret");
  std::string huge(200 * 1024, 'x');
  auto r = user.request("POST", "/api/v1/jobs", huge, "application/json");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 413);
  HttpClient user2(url_, "user-secret");
  r = user2.request("POST", "/api/v1/jobs", "{not json", "application/json");
  EXPECT_EQ(r->status, 400);
  r = user2.post_json("/api/v1/jobs", {{"spec_yaml", 42}});
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(user2.get("/api/v1/nope")->status, 404);
  EXPECT_EQ(user2.request("DELETE", "/api/v1/jobs", "", "text/plain")->status, 405);
  EXPECT_EQ(user2.get("/api/v1/health")->status, 200);
  EXPECT_EQ(job_count(), 0u);
}

// A client still sending a body over the limit when the 413 comes back must be able to finish
// sending and read the 413: kfleetd drains what follows instead of closing at once, which would
// answer the rest with a reset (libcurl then reports "Send failure: Connection reset by peer"
// and the 413 that says what to fix is lost).
TEST_F(ApiTest, ABodyOverTheLimitIsDrainedSoItsClientReadsThe413) {
  const int port = std::stoi(url_.substr(url_.rfind(':') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::size_t body = 1024 * 1024, first = 128 * 1024;  // the limit here is 64 KiB
  const std::string head = "POST /api/v1/jobs HTTP/1.1\r\nHost: kfleetd\r\n"
                           "Authorization: Bearer user-secret\r\nContent-Type: application/json\r\n"
                           "Content-Length: " + std::to_string(body) + "\r\n\r\n";
  const std::string chunk(16 * 1024, 'x');
  auto send_all = [&](const std::string& s) {
    for (std::size_t at = 0; at < s.size();) {
      const ssize_t n = ::send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<std::size_t>(n);
    }
    return true;
  };
  ASSERT_TRUE(send_all(head));
  for (std::size_t sent = 0; sent < first; sent += chunk.size()) ASSERT_TRUE(send_all(chunk));
  // The answer comes before the body is whole; then the client goes on sending the rest.
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1) << "no answer within 10 s";
  for (std::size_t sent = first; sent < body; sent += chunk.size())
    ASSERT_TRUE(send_all(chunk)) << "kfleetd reset the connection after " << sent << " bytes: "
                                 << std::strerror(errno);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  EXPECT_NE(answer.find("--max-body-bytes"), std::string::npos) << answer;
  EXPECT_EQ(job_count(), 0u);
}

TEST_F(ApiTest, AgentsNeedTheEnrolmentTokenAndTheirOwnToken) {
  HttpClient anon(url_);
  nlohmann::json enrol = {{"name", "a1"}, {"region", "r1"}, {"backend", "simulated"},
                          {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}};
  EXPECT_EQ(anon.post_json("/api/v1/agents/enrol", enrol)->status, 401);
  HttpClient enrolc(url_, "enrol-secret");
  auto r = enrolc.post_json("/api/v1/agents/enrol", enrol);
  ASSERT_EQ(r->status, 201) << r->body;
  auto j = *r->json();
  const auto id = j["agent_id"].get<std::int64_t>();
  const std::string hb = "/api/v1/agents/" + std::to_string(id) + "/heartbeat";
  EXPECT_EQ(enrolc.post_json(hb, nlohmann::json::object())->status, 403);
  EXPECT_EQ(anon.post_json(hb, nlohmann::json::object())->status, 401);
  HttpClient user(url_, "user-secret");
  EXPECT_EQ(user.post_json(hb, nlohmann::json::object())->status, 403);
  HttpClient agent(url_, j["token"].get<std::string>());
  EXPECT_EQ(agent.post_json(hb, nlohmann::json::object())->status, 200);
  // The agent's GPUs are marked simulated because its backend is.
  auto agents = *user.get("/api/v1/agents")->json();
  EXPECT_TRUE(agents["agents"][0]["simulated"].get<bool>());
}

TEST_F(ApiTest, TheAgentListIsTheLiveFleetPagedAndFilteredByState) {
  HttpClient enrolc(url_, "enrol-secret");
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    auto r = enrolc.post_json("/api/v1/agents/enrol",
                              {{"name", "a" + std::to_string(i)}, {"region", "r1"},
                               {"backend", "simulated"}, {"gpus", {{{"gpu_class", "L4"}}}}});
    ASSERT_EQ(r->status, 201) << r->body;
    ids.push_back((*r->json())["agent_id"].get<std::int64_t>());
  }
  // Two go: history, not fleet (retired on the server's thread, which owns the store).
  std::promise<bool> retired;
  boost::asio::post(io_, [&] {
    retired.set_value(cp_->retire_agent(ids[0], "test").ok() && cp_->retire_agent(ids[3], "test").ok());
  });
  ASSERT_TRUE(retired.get_future().get());
  HttpClient user(url_, "user-secret");
  auto names = [&](const std::string& path) {
    auto r = user.get(path);
    EXPECT_EQ(r->status, 200) << r->body;
    const nlohmann::json body = *r->json();
    std::string out;
    for (const auto& a : body["agents"]) out += a["name"].get<std::string>();
    return out;
  };
  EXPECT_EQ(names("/api/v1/agents"), "a1a2a4");
  EXPECT_EQ(names("/api/v1/agents?state=all"), "a0a1a2a3a4");
  EXPECT_EQ(names("/api/v1/agents?state=retired"), "a0a3");
  auto first = *user.get("/api/v1/agents?state=all&limit=2")->json();
  ASSERT_EQ(first["agents"].size(), 2u);
  ASSERT_TRUE(first.contains("next_after"));
  EXPECT_EQ(names("/api/v1/agents?state=all&limit=2&after=" +
                  std::to_string(first["next_after"].get<std::int64_t>())),
            "a2a3");
  auto last = *user.get("/api/v1/agents?state=all&limit=5")->json();
  EXPECT_FALSE(last.contains("next_after"));  // nothing follows
  auto bad = user.get("/api/v1/agents?state=asleep");
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("unknown agent state 'asleep'"), std::string::npos) << bad->body;
}

TEST_F(ApiTest, LeaseLongPollGetsAQueuedJobAndStaleTokensAreRefused) {
  HttpClient enrolc(url_, "enrol-secret");
  nlohmann::json enrol = {{"name", "a1"}, {"region", "r1"}, {"backend", "simulated"},
                          {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}};
  auto e = *enrolc.post_json("/api/v1/agents/enrol", enrol)->json();
  HttpClient agent(url_, e["token"].get<std::string>());
  const std::string base = "/api/v1/agents/" + std::to_string(e["agent_id"].get<int>());
  // Nothing queued: the poll times out with 204.
  EXPECT_EQ(agent.post_json(base + "/lease?wait_ms=50", nlohmann::json::object())->status, 204);
  HttpClient user(url_, "user-secret");
  ASSERT_EQ(user.post_json("/api/v1/jobs", submit_body(good_yaml("j1")))->status, 201);
  auto l = agent.post_json(base + "/lease?wait_ms=5000", nlohmann::json::object());
  ASSERT_EQ(l->status, 200) << l->body;
  auto lease = (*l->json())["lease"];
  const auto run = lease["run_id"].get<std::int64_t>();
  const auto token = lease["fencing_token"].get<std::int64_t>();
  const std::string ev = "/api/v1/runs/" + std::to_string(run) + "/events";
  nlohmann::json batch = {{"fencing_token", token},
                          {"events", {{{"seq", 1}, {"type", "stage.started"}, {"data", {{"stage", "build"}}}}}}};
  auto up = agent.post_json(ev, batch);
  ASSERT_EQ(up->status, 200) << up->body;
  EXPECT_EQ((*up->json())["contiguous"], 1);
  EXPECT_EQ((*agent.post_json(ev, batch)->json())["duplicates"], 1);  // a retry is not a duplicate row
  batch["fencing_token"] = token + 1;
  EXPECT_EQ(agent.post_json(ev, batch)->status, 409);
  auto job = *user.get("/api/v1/jobs/1")->json();
  EXPECT_EQ(job["job"]["state"], "building");
}

}  // namespace
