// A standby kfleetd (several on one PostgreSQL) serves the reads itself, from a read-only
// connection: the same bodies as the leader for the same token, the same authentication
// (a token the leader revoked is refused at once), and its event streams follow the store.
// Writes and agent calls get 503 with the leader's URL; its /metrics says only that it does not
// lead (kfleet_leader 0), the leader's says it does. It never writes: while the
// leader is paused, reading everything through the standby assigns no transaction id. When the
// leader dies it takes over on the port it already listens on.
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "cluster.hpp"
#include "pg_sql.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/http_client.hpp"
#include "kfleet/common/jobspec.hpp"
#include "kfleet/store/pg_scratch.hpp"

namespace kfleet::e2e {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// One GET over a plain socket, read to the end (an SSE stream of a finished job ends by
// itself): the status line, the headers and the body exactly as sent.
std::string raw_get(int port, const std::string& path, const std::string& token,
                    const std::string& accept) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "";
  }
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: " + accept +
                          "\r\nAuthorization: Bearer " + token + "\r\nConnection: close\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return "";
  }
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string header_of(const std::string& raw, const std::string& name) {
  const auto end = raw.find("\r\n\r\n");
  std::string head = raw.substr(0, end);
  for (auto& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const auto at = head.find("\r\n" + name + ":");
  if (at == std::string::npos) return "";
  auto v = raw.substr(at + 3 + name.size(), head.find("\r\n", at + 2) - at - 3 - name.size());
  while (!v.empty() && v.front() == ' ') v.erase(0, 1);
  return v;
}

std::string body_of(const std::string& raw) {
  const auto end = raw.find("\r\n\r\n");
  return end == std::string::npos ? "" : raw.substr(end + 4);
}

// Two kfleetd on one database, each on its own port.
class Pair {
 public:
  explicit Pair(std::string db, std::vector<std::string> flags = {}, std::string scheme = "http")
      : db_(std::move(db)), dir_(make_temp_dir("kfleet-standby")), flags_(std::move(flags)),
        scheme_(std::move(scheme)) {}
  ~Pair() {
    for (auto& a : agents_) a.terminate(3000);
    for (auto& p : procs_)
      if (p.running()) {
        ::kill(p.pid(), SIGCONT);
        p.terminate(5000);
      }
    if (!::testing::Test::HasFailure()) fs::remove_all(dir_);
    else std::fprintf(stderr, "standby: keeping %s for inspection\n", dir_.c_str());
  }
  void start(std::size_t i) {
    const std::string pf = dir_ + "/port-" + std::to_string(i);
    std::vector<std::string> argv = {KFLEETD_BIN, "--listen", "127.0.0.1:0", "--db", db_,
                                     "--port-file", pf, "--submit-rate-per-min", "0",
                                     "--provisioner", "static"};
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    const int port =
        start_kfleetd_process(procs_[i], argv, dir_ + "/kfleetd-" + std::to_string(i) + ".log", pf);
    ASSERT_GT(port, 0) << "kfleetd " << i;
    ports_[i] = port;
  }
  std::string url(std::size_t i) const {
    return scheme_ + "://127.0.0.1:" + std::to_string(ports_[i]);
  }
  int port(std::size_t i) const { return ports_[i]; }
  std::string leader_url() { return pg_one(db_, "SELECT url FROM kfleet_leader"); }
  Proc& proc(std::size_t i) { return procs_[i]; }
  void start_agent(const std::string& name) {
    const std::string work = dir_ + "/agent-" + name;
    fs::create_directories(work);
    agents_.push_back(Proc::spawn({KFLEET_AGENT_BIN, "--server", url(0), "--name", name,
                                   "--region", "local", "--backend", "simulated", "--gpu-class",
                                   "L4", "--arch", "sm_89", "--work-dir", work},
                                  dir_ + "/agent-" + name + ".log",
                                  {{"KFLEET_LOG", "debug"}, {"KFLEET_ENROL_TOKEN", Cluster::kEnrolToken}}));
  }
  void stop_agents() {
    for (auto& a : agents_) a.terminate(5000);
  }
  const std::string& dir() const { return dir_; }
  std::string logs() { return log_tails(dir_, "", 3000); }

 private:
  std::string db_, dir_;
  std::vector<std::string> flags_;
  std::string scheme_;
  Proc procs_[2];
  int ports_[2] = {0, 0};
  std::vector<Proc> agents_;
};

TEST(PostgresStandby, ServesTheLeadersReadsRefusesRevokedTokensAndRedirectsWrites) {
  auto server = store::ScratchPostgres::start();
  ASSERT_TRUE(server.ok()) << server.error().message;
  auto db = (*server)->create_database("kfleet");
  ASSERT_TRUE(db.ok()) << db.error().message;
  // No autovacuum (its ANALYZE takes transaction ids) while the test counts them below.
  pg_sql((*server)->url("postgres"), "ALTER SYSTEM SET autovacuum = off");
  pg_sql((*server)->url("postgres"), "SELECT pg_reload_conf()");

  Pair pair(*db);
  pair.start(0);
  ASSERT_TRUE(wait_until([&] { return pair.leader_url() == pair.url(0); },
                         std::chrono::seconds(10)))
      << pair.logs();
  pair.start(1);
  ASSERT_NE(pair.port(1), pair.port(0));

  // Users: alice may submit, bob may only read.
  HttpClient admin_leader(pair.url(0), Cluster::kUserToken);
  auto make_token = [&](const std::string& user, const std::string& scope) {
    auto r = admin_leader.post_json("/api/v1/tokens", {{"user", user}, {"scope", scope}});
    EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.error().message);
    auto j = r.ok() ? r->json() : Result<nlohmann::json>(make_error(Errc::internal, "no reply"));
    return j.ok() ? std::make_pair((*j)["token"]["token"].get<std::string>(),
                                   (*j)["token"]["id"].get<std::int64_t>())
                  : std::make_pair(std::string(), std::int64_t{0});
  };
  const std::string alice = make_token("alice", "submit").first;
  const auto bob_token = make_token("bob", "read");
  const std::string bob = bob_token.first;
  const std::int64_t bob_id = bob_token.second;
  ASSERT_FALSE(alice.empty());
  ASSERT_FALSE(bob.empty());

  // Jobs submitted through the leader by alice, run by one simulated agent.
  const std::string jobdir = pair.dir() + "/job";
  fs::create_directories(jobdir);
  write_file(jobdir + "/k.cu", "__global__ void k(float* o) { o[threadIdx.x] = 1.f; }\n");
  write_file(jobdir + "/job.yaml", Cluster::sim_job_yaml("sb/0"));
  auto spec = parse_job_spec_file(jobdir + "/job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error_text();
  auto bundle = pack_job_bundle(jobdir, spec.spec->kernel.sources,
                                std::string(KFLEET_SOURCE_DIR) + "/kernels");
  ASSERT_TRUE(bundle.ok());
  HttpClient alice_leader(pair.url(0), alice);
  auto submit_to = [&](HttpClient& c, const std::string& name) -> std::int64_t {
    auto r = c.post_json("/api/v1/jobs",
                                    {{"spec_yaml", Cluster::sim_job_yaml(name, "L4", "", 60)},
                                     {"source_name", "job.yaml"},
                                     {"bundle", bundle_to_json(*bundle)},
                                     {"force", true}});
    EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.error().message);
    auto j = r.ok() ? r->json() : Result<nlohmann::json>(make_error(Errc::internal, "no reply"));
    return j.ok() ? (*j)["job"]["id"].get<std::int64_t>() : 0;
  };
  auto submit = [&](const std::string& name) { return submit_to(alice_leader, name); };
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(submit("sb/" + std::to_string(i)));

  // A stream on the standby, opened while the last job still waits for an agent, follows it to
  // its end: the standby polls the store, the leader writes.
  std::string live;
  std::thread follower([&] {
    live = raw_get(pair.port(1), "/api/v1/jobs/" + std::to_string(ids.back()) + "/events", bob,
                   "text/event-stream");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(pg_one(*db, "SELECT count(*) FROM runs"), "0") << "no agent yet: nothing ran";
  pair.start_agent("a0");
  auto terminal = [&] {
    return pg_one(*db, "SELECT count(*) FROM jobs WHERE state IN ('passed', 'rejected', 'error', "
                    "'cancelled')") == "3";
  };
  ASSERT_TRUE(wait_until(terminal, std::chrono::seconds(90))) << pair.logs();
  follower.join();
  pair.stop_agents();

  HttpClient admin_standby(pair.url(1), Cluster::kUserToken);
  HttpClient bob_standby(pair.url(1), bob);
  HttpClient bob_leader(pair.url(0), bob);

  // The same body from both, for the admin and for a read-only user.
  std::vector<std::string> paths = {"/api/v1/jobs", "/api/v1/jobs?state=passed&limit=2",
                                    "/api/v1/events", "/api/v1/events?after=3&limit=5",
                                    "/api/v1/results", "/api/v1/baselines", "/api/v1/whoami",
                                    "/api/v1/regressions"};
  for (auto id : ids) {
    paths.push_back("/api/v1/jobs/" + std::to_string(id));
    paths.push_back("/api/v1/jobs/" + std::to_string(id) + "/events");
  }
  auto detail = admin_leader.get("/api/v1/jobs/" + std::to_string(ids[0]));
  ASSERT_TRUE(detail.ok() && detail->status == 200);
  const auto run_id = (*detail->json())["runs"][0]["id"].get<std::int64_t>();
  paths.push_back("/api/v1/runs/" + std::to_string(run_id));
  paths.push_back("/api/v1/runs/" + std::to_string(run_id) + "/events");
  const auto bundle_hash = (*detail->json())["job"]["bundle_hash"].get<std::string>();
  paths.push_back("/api/v1/bundles/" + bundle_hash);
  auto compare = [&](HttpClient& leader, HttpClient& standby, const std::string& path) {
    auto l = leader.get(path);
    auto s = standby.get(path);
    ASSERT_TRUE(l.ok() && s.ok()) << path;
    EXPECT_EQ(l->status, 200) << path << ": " << l->body;
    EXPECT_EQ(s->status, l->status) << path << ": " << s->body;
    EXPECT_EQ(s->body, l->body) << path;
    EXPECT_EQ(s->headers["x-kfleet-role"], "standby") << path;
    EXPECT_EQ(l->headers["x-kfleet-role"], "leader") << path;
  };
  for (const auto& p : paths) {
    compare(admin_leader, admin_standby, p);
    compare(bob_leader, bob_standby, p);
  }
  for (const std::string p : {"/api/v1/tokens", "/api/v1/audit?limit=50"})
    compare(admin_leader, admin_standby, p);
  {
    // The fleet view: the same agents. Their last_seen is the leader's memory of the last
    // heartbeat on the leader, and the store's (the last state change written) on the standby,
    // which is never later (docs/architecture.md, "Liveness in memory").
    auto l = admin_leader.get("/api/v1/agents");
    auto s = admin_standby.get("/api/v1/agents");
    ASSERT_TRUE(l.ok() && s.ok());
    ASSERT_EQ(s->status, 200) << s->body;
    auto la = (*l->json())["agents"], sa = (*s->json())["agents"];
    ASSERT_EQ(sa.size(), la.size()) << s->body;
    for (std::size_t i = 0; i < la.size(); ++i) {
      EXPECT_LE(sa[i]["last_seen"].get<std::string>(), la[i]["last_seen"].get<std::string>());
      la[i].erase("last_seen");
      sa[i].erase("last_seen");
    }
    EXPECT_EQ(sa, la);
    auto h = admin_standby.get("/api/v1/health");
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->status, 200) << h->body;
    EXPECT_EQ(h->headers["x-kfleet-role"], "standby");
    EXPECT_EQ((*h->json())["store"], "postgresql");
  }

  // The live stream got every event of its job, with the leader's ids, and ended.
  {
    auto evs = (*admin_leader.get("/api/v1/jobs/" + std::to_string(ids.back()) + "/events")
                     ->json())["events"];
    ASSERT_FALSE(evs.empty());
    EXPECT_EQ(header_of(live, "x-kfleet-role"), "standby") << live.substr(0, 400);
    std::string expect_ids, got_ids;
    for (const auto& e : evs) expect_ids += std::to_string(e["id"].get<std::int64_t>()) + ",";
    std::string body = body_of(live);
    for (std::size_t at = 0; (at = body.find("id: ", at)) != std::string::npos; at += 4)
      got_ids += body.substr(at + 4, body.find('\n', at) - at - 4) + ",";
    EXPECT_EQ(got_ids, expect_ids) << live;
    EXPECT_NE(body.find("event: end"), std::string::npos) << live;
  }
  // A finished job's stream: the same frames from both, byte for byte.
  for (auto id : ids) {
    const std::string path = "/api/v1/jobs/" + std::to_string(id) + "/events";
    const std::string l = raw_get(pair.port(0), path, bob, "text/event-stream");
    const std::string s = raw_get(pair.port(1), path, bob, "text/event-stream");
    EXPECT_EQ(header_of(l, "content-type"), "text/event-stream");
    EXPECT_EQ(header_of(s, "content-type"), "text/event-stream");
    EXPECT_EQ(header_of(l, "x-kfleet-role"), "leader");
    EXPECT_EQ(body_of(s), body_of(l)) << path;
    EXPECT_NE(body_of(s).find("event: end"), std::string::npos) << s;
  }
  {
    const std::string path = "/api/v1/runs/" + std::to_string(run_id) + "/events";
    EXPECT_EQ(body_of(raw_get(pair.port(1), path, bob, "text/event-stream")),
              body_of(raw_get(pair.port(0), path, bob, "text/event-stream")));
  }

  // The same refusals: no token, an unknown one, too low a scope, an agent's or the
  // enrolment token on a user call.
  auto enrolled = HttpClient(pair.url(0), Cluster::kEnrolToken)
                      .post_json("/api/v1/agents/enrol",
                                 {{"name", "probe"}, {"region", "local"}, {"backend", "simulated"},
                                  {"gpus", {{{"gpu_class", "T4"}, {"arch", "sm_75"}, {"name", "probe"}}}}});
  ASSERT_TRUE(enrolled.ok() && enrolled->status == 201)
      << (enrolled.ok() ? enrolled->body : enrolled.error().message);
  const std::string agent_token = (*enrolled->json())["token"];
  struct Case {
    std::string token, path;
    long status;
  };
  for (const auto& c : std::vector<Case>{{"", "/api/v1/jobs", 401},
                                         {"kft_unknown_token_0123456789", "/api/v1/jobs", 401},
                                         {bob, "/api/v1/tokens", 403},
                                         {alice, "/api/v1/audit", 403},
                                         {agent_token, "/api/v1/jobs", 403},
                                         {Cluster::kEnrolToken, "/api/v1/jobs", 403},
                                         {agent_token, "/api/v1/bundles/" + bundle_hash, 403}}) {
    auto l = HttpClient(pair.url(0), c.token).get(c.path);
    auto s = HttpClient(pair.url(1), c.token).get(c.path);
    ASSERT_TRUE(l.ok() && s.ok());
    EXPECT_EQ(l->status, c.status) << c.path << ": " << l->body;
    EXPECT_EQ(s->status, c.status) << c.path << ": " << s->body;
    EXPECT_EQ(s->body, l->body) << c.path;
  }

  // Writes go to the leader: 503, the standby's role, the leader's URL; nothing is done.
  {
    HttpClient alice_standby(pair.url(1), alice);
    const std::string before = pg_one(*db, "SELECT count(*) FROM jobs");
    auto r = alice_standby.post_json("/api/v1/jobs", {{"spec_yaml", "name: x"}});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, 503) << r->body;
    EXPECT_EQ(r->headers["x-kfleet-role"], "standby");
    EXPECT_EQ(r->headers["location"], pair.url(0) + "/api/v1/jobs");
    EXPECT_EQ((*r->json())["leader"], pair.url(0)) << r->body;
    EXPECT_EQ((*r->json())["error"]["code"], "standby") << r->body;
    EXPECT_EQ(pg_one(*db, "SELECT count(*) FROM jobs"), before);
    for (const auto& [method, path, token] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {"POST", "/api/v1/jobs/" + std::to_string(ids[0]) + "/cancel", alice},
             {"POST", "/api/v1/agents/enrol", Cluster::kEnrolToken},
             {"POST", "/api/v1/tokens/" + std::to_string(bob_id) + "/revoke", Cluster::kUserToken},
             {"DELETE", "/api/v1/jobs/" + std::to_string(ids[0]), Cluster::kUserToken}}) {
      auto w = HttpClient(pair.url(1), token).request(method, path, "{}", "application/json");
      ASSERT_TRUE(w.ok());
      EXPECT_EQ(w->status, 503) << method << " " << path << ": " << w->body;
      EXPECT_EQ(w->headers["x-kfleet-role"], "standby") << method << " " << path;
    }
    // A scraper of both sees both up, and which one leads; the fleet's figures (the stockout
    // counters are the leader's memory) come from the leader alone, so sums over kfleetd hold.
    auto ms = HttpClient(pair.url(1), alice).get("/metrics");
    auto ml = HttpClient(pair.url(0), alice).get("/metrics");
    ASSERT_TRUE(ms.ok() && ml.ok());
    EXPECT_EQ(ms->status, 200) << ms->body;
    EXPECT_EQ(ms->headers["x-kfleet-role"], "standby");
    EXPECT_NE(ms->body.find("\nkfleet_leader 0\n"), std::string::npos) << ms->body;
    EXPECT_EQ(ms->body.find("kfleet_queue_depth"), std::string::npos) << ms->body;
    EXPECT_EQ(ml->status, 200) << ml->body;
    EXPECT_NE(ml->body.find("\nkfleet_leader 1\n"), std::string::npos) << ml->body;
    EXPECT_NE(ml->body.find("kfleet_queue_depth{state=\"queued\"}"), std::string::npos) << ml->body;
    // Where its thread waited on the server, by what each round trip carried: the job list's
    // read above among them.
    EXPECT_NE(ml->body.find("\nkfleet_store_statement_wait_seconds_total{statement=\"SELECT jobs\"} "),
              std::string::npos) << ml->body;
    EXPECT_NE(ml->body.find("\nkfleet_store_statement_round_trips_total{statement=\"SELECT jobs\"} "),
              std::string::npos) << ml->body;
    // The agents page reads the agents, not the region blocks the leader keeps in memory.
    auto blocks_read = [&]() -> long {
      auto m = HttpClient(pair.url(0), alice).get("/metrics");
      const std::string key = "\nkfleet_store_statement_round_trips_total{statement=\"SELECT region_blocks\"} ";
      const auto at = m.ok() ? m->body.find(key) : std::string::npos;
      return at == std::string::npos ? 0 : std::stol(m->body.substr(at + key.size()));
    };
    const long blocks_before = blocks_read();
    for (int i = 0; i < 3; ++i) {
      auto agents = HttpClient(pair.url(0), alice).get("/api/v1/agents");
      ASSERT_TRUE(agents.ok());
      EXPECT_EQ(agents->status, 200) << agents->body;
      EXPECT_NE(agents->body.find("\"blocks\":["), std::string::npos) << agents->body;
    }
    EXPECT_LE(blocks_read() - blocks_before, 1) << "read once at most, then kept";
    // Like the leader's, it needs a read token.
    auto anon = HttpClient(pair.url(1)).get("/metrics");
    ASSERT_TRUE(anon.ok());
    EXPECT_EQ(anon->status, 401) << anon->body;
    // A client given both URLs, the standby first, reads from it and writes to the leader.
    HttpClient both(pair.url(1) + "," + pair.url(0), alice);
    auto read = both.get("/api/v1/jobs");
    ASSERT_TRUE(read.ok());
    EXPECT_EQ(read->status, 200);
    EXPECT_EQ(both.base_url(), pair.url(1));
    auto cancel = both.post_json("/api/v1/jobs/999999/cancel", nlohmann::json::object());
    ASSERT_TRUE(cancel.ok());
    EXPECT_EQ(cancel->status, 404) << cancel->body;
    EXPECT_EQ(cancel->headers["x-kfleet-role"], "leader");
    EXPECT_EQ(both.base_url(), pair.url(0));
  }

  // The standby writes nothing: with the leader paused, reading everything through the
  // standby (streams included) assigns no transaction id.
  {
    ASSERT_EQ(::kill(pair.proc(0).pid(), SIGSTOP), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a write under way ends
    const auto x1 = std::stoll(pg_one(*db, "SELECT txid_current()"));
    for (const auto& p : paths) {
      auto r = admin_standby.get(p);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->status, 200) << p;
    }
    for (auto id : ids)
      raw_get(pair.port(1), "/api/v1/jobs/" + std::to_string(id) + "/events", bob,
              "text/event-stream");
    EXPECT_EQ(bob_standby.get("/api/v1/jobs")->status, 200);
    EXPECT_EQ(HttpClient(pair.url(1), agent_token).get("/api/v1/jobs")->status, 403);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));  // a few standby polls
    const auto x2 = std::stoll(pg_one(*db, "SELECT txid_current()"));
    EXPECT_EQ(x2, x1 + 1) << "something wrote while only the standby was serving";
    ASSERT_EQ(::kill(pair.proc(0).pid(), SIGCONT), 0);
  }

  // The leader revokes bob's token: the standby refuses it at once (it caches no token).
  {
    auto r = admin_leader.post_json("/api/v1/tokens/" + std::to_string(bob_id) + "/revoke",
                                    nlohmann::json::object());
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->status, 200) << r->body;
    auto s = bob_standby.get("/api/v1/jobs");
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->status, 401) << s->body;
    EXPECT_EQ(s->headers["x-kfleet-role"], "standby");
    EXPECT_EQ(bob_leader.get("/api/v1/jobs")->status, 401);
    EXPECT_EQ(raw_get(pair.port(1), "/api/v1/events", bob, "text/event-stream").substr(0, 12),
              "HTTP/1.1 401");
  }

  // The leader dies: the standby takes over on the port it serves, within 10 s, and now writes.
  {
    const auto t0 = Clock::now();
    pair.proc(0).kill9();
    ASSERT_TRUE(wait_until([&] { return pair.leader_url() == pair.url(1); },
                           std::chrono::seconds(15)))
        << pair.logs();
    HttpClient alice_new(pair.url(1), alice);
    std::optional<HttpResponse> r;
    ASSERT_TRUE(wait_until(
        [&] {
          auto x = alice_new.post_json("/api/v1/jobs/" + std::to_string(ids[0]) + "/cancel",
                                       nlohmann::json::object());
          if (!x.ok() || x->status == 503) return false;
          r = *x;
          return true;
        },
        std::chrono::seconds(15)))
        << pair.logs();
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("the standby took over and accepted a write after %.2f s\n", took);
    EXPECT_LT(took, 10.0);
    EXPECT_EQ(r->status, 409) << r->body;  // the job had finished: the leader's answer
    EXPECT_EQ(r->headers["x-kfleet-role"], "leader");
    EXPECT_GT(submit_to(alice_new, "sb/after-takeover"), ids.back());
  }
}

// With --tls-cert/--tls-key a standby listens and serves over TLS as the leader does (before,
// a TLS standby did not listen at all until it led), and redirects writes to the https URL.
TEST(PostgresStandby, ATlsStandbyServesReadsOverTls) {
  auto server = store::ScratchPostgres::start();
  ASSERT_TRUE(server.ok()) << server.error().message;
  auto db = (*server)->create_database("kfleet");
  ASSERT_TRUE(db.ok()) << db.error().message;
  const std::string certs = make_temp_dir("kfleet-standby-certs");
  auto made = run_cmd({"/bin/bash", std::string(KFLEET_SOURCE_DIR) + "/tests/support/make-test-certs.sh",
                       certs},
                      60000);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  Pair pair(*db, {"--tls-cert", certs + "/server.pem", "--tls-key", certs + "/server.key"},
            "https");
  pair.start(0);
  ASSERT_TRUE(wait_until([&] { return pair.leader_url() == pair.url(0); },
                         std::chrono::seconds(10)))
      << pair.logs();
  pair.start(1);
  HttpOptions o;
  o.ca_file = certs + "/ca.pem";
  HttpClient leader(pair.url(0), Cluster::kUserToken, o), standby(pair.url(1), Cluster::kUserToken, o);
  auto l = leader.get("/api/v1/whoami");
  auto s = standby.get("/api/v1/whoami");
  ASSERT_TRUE(l.ok()) << l.error().message;
  ASSERT_TRUE(s.ok()) << s.error().message << pair.logs();
  EXPECT_EQ(s->status, 200) << s->body;
  EXPECT_EQ(s->body, l->body);
  EXPECT_EQ(s->headers["x-kfleet-role"], "standby");
  auto w = standby.post_json("/api/v1/tokens", {{"user", "carol"}});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->status, 503) << w->body;
  EXPECT_EQ(w->headers["location"], pair.url(0) + "/api/v1/tokens");
  // Plain HTTP to the TLS standby gets nothing.
  auto plain = HttpClient("http://127.0.0.1:" + std::to_string(pair.port(1)), Cluster::kUserToken)
                   .get("/api/v1/whoami", std::chrono::milliseconds(5000));
  EXPECT_FALSE(plain.ok() && plain->status == 200);
  fs::remove_all(certs);
}

}  // namespace
}  // namespace kfleet::e2e
