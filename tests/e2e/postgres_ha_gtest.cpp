// Several kfleetd on one PostgreSQL database (a scratch server): one leads, the others serve
// reads and answer writes as standbys with the leader's URL, and agents and clients given every
// URL follow the leader.
// The chaos run: 200 jobs on simulated agents while the leader is killed with -9 three times.
// Afterwards no job is lost or run twice, event ids and sequence numbers have no gap and no
// duplicate, no agent ever held two jobs at once, and each takeover took under 10 s.
#include <libpq-fe.h>

#include <filesystem>

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

// kfleetd processes sharing one database, each on its own port (kept across restarts).
class Fleet {
 public:
  Fleet(std::string db, int n) : db_(std::move(db)), dir_(make_temp_dir("kfleet-ha")) {
    procs_.resize(static_cast<std::size_t>(n));
    ports_.assign(static_cast<std::size_t>(n), 0);
  }
  ~Fleet() {
    for (auto& a : agents_) a.terminate(3000);
    for (auto& p : procs_)
      if (p.running()) p.terminate(5000);
    if (!::testing::Test::HasFailure()) fs::remove_all(dir_);
    else std::fprintf(stderr, "ha: keeping %s for inspection\n", dir_.c_str());
  }

  // Starts kfleetd i (leader or standby) and waits until it listens.
  void start(std::size_t i) {
    const std::string pf = dir_ + "/port-" + std::to_string(i);
    const int port = start_kfleetd_process(
        procs_[i],
        {KFLEETD_BIN, "--listen", "127.0.0.1:" + std::to_string(ports_[i]), "--db", db_,
         "--lease-ttl-ms", "10000", "--heartbeat-ms", "300", "--port-file", pf,
         "--submit-rate-per-min", "0", "--provisioner", "static"},
        dir_ + "/kfleetd-" + std::to_string(i) + "-" + std::to_string(starts_++) + ".log", pf);
    ASSERT_GT(port, 0) << "kfleetd " << i;
    ports_[i] = port;
  }
  std::string url(std::size_t i) const {
    return "http://127.0.0.1:" + std::to_string(ports_[i]);
  }
  std::string urls() const {
    std::string s;
    for (std::size_t i = 0; i < ports_.size(); ++i) s += (i ? "," : "") + url(i);
    return s;
  }
  // Which kfleetd the database names as leader, and its epoch; -1 while none serves.
  std::pair<int, std::int64_t> leader() {
    auto rows = pg_sql(db_, "SELECT url, epoch FROM kfleet_leader");
    if (rows.empty()) return {-1, 0};
    for (std::size_t i = 0; i < ports_.size(); ++i)
      if (rows[0][0] == url(i)) return {static_cast<int>(i), std::stoll(rows[0][1])};
    return {-1, std::stoll(rows[0][1])};
  }
  Proc& proc(std::size_t i) { return procs_[i]; }
  void start_agent(const std::string& name) {
    const std::string work = dir_ + "/agent-" + name;
    fs::create_directories(work);
    agents_.push_back(Proc::spawn({KFLEET_AGENT_BIN, "--server", urls(), "--name", name,
                                   "--region", "local", "--backend", "simulated", "--gpu-class",
                                   "L4", "--arch", "sm_89", "--work-dir", work},
                                  dir_ + "/agent-" + name + ".log",
                                  {{"KFLEET_LOG", "debug"}, {"KFLEET_ENROL_TOKEN", Cluster::kEnrolToken}}));
  }
  const std::string& dir() const { return dir_; }
  std::string logs() { return log_tails(dir_, "kfleetd", 3000); }

 private:
  std::string db_, dir_;
  std::vector<Proc> procs_;
  std::vector<int> ports_;
  std::vector<Proc> agents_;
  int starts_ = 0;
};

TEST(PostgresHA, TwoHundredJobsSurviveTheLeaderKilledThreeTimes) {
  auto server = store::ScratchPostgres::start();
  ASSERT_TRUE(server.ok()) << server.error().message;
  auto db = (*server)->create_database("kfleet");
  ASSERT_TRUE(db.ok()) << db.error().message;

  Fleet fleet(*db, 3);
  fleet.start(0);
  ASSERT_TRUE(wait_until([&] { return fleet.leader().first == 0; }, std::chrono::seconds(10)))
      << fleet.logs();
  fleet.start(1);
  fleet.start(2);

  // A standby serves reads itself, and answers a write 503 as a standby, naming the leader.
  {
    HttpClient standby(fleet.url(1), Cluster::kUserToken);
    auto r = standby.get("/api/v1/jobs");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->headers["x-kfleet-role"], "standby");
    auto w = standby.post_json("/api/v1/jobs/1/cancel", nlohmann::json::object());
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_EQ(w->status, 503) << w->body;
    EXPECT_EQ(w->headers["x-kfleet-role"], "standby");
    EXPECT_EQ((*w->json())["leader"], fleet.url(0)) << w->body;
  }
  // A client given every URL, the standbys first, gets its write to the leader.
  {
    HttpClient any(fleet.url(2) + "," + fleet.url(1) + "," + fleet.url(0), Cluster::kUserToken);
    auto r = any.post_json("/api/v1/jobs/999999/cancel", nlohmann::json::object());
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, 404) << r->body;
    EXPECT_EQ(r->headers["x-kfleet-role"], "leader");
    EXPECT_EQ(any.base_url(), fleet.url(0));
  }

  // So does the CLI, given the list in KFLEET_SERVER.
  {
    auto r = run_cmd({KFLEET_CLI_BIN, "status"}, 60000,
                     {{"KFLEET_SERVER", fleet.url(1) + "," + fleet.url(2) + "," + fleet.url(0)},
                      {"KFLEET_TOKEN", Cluster::kUserToken}, {"NO_COLOR", "1"}, {"HOME", fleet.dir()},
                      {"XDG_CONFIG_HOME", fleet.dir() + "/xdg"}});
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }

  // 200 jobs, submitted through the URL list.
  const std::string jobdir = fleet.dir() + "/job";
  fs::create_directories(jobdir);
  write_file(jobdir + "/k.cu", "__global__ void k(float* o) { o[threadIdx.x] = 1.f; }\n");
  const std::string yaml0 = Cluster::sim_job_yaml("ha/0", "L4", "", 40);
  write_file(jobdir + "/job.yaml", yaml0);
  auto spec = parse_job_spec_file(jobdir + "/job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error_text();
  auto bundle = pack_job_bundle(jobdir, spec.spec->kernel.sources,
                                std::string(KFLEET_SOURCE_DIR) + "/kernels");
  ASSERT_TRUE(bundle.ok());
  constexpr int kJobs = 200;
  {
    HttpClient c(fleet.urls(), Cluster::kUserToken);
    for (int i = 0; i < kJobs; ++i) {
      auto r = c.post_json("/api/v1/jobs",
                           {{"spec_yaml", Cluster::sim_job_yaml("ha/" + std::to_string(i), "L4",
                                                                "", 40)},
                            {"source_name", "job.yaml"},
                            {"bundle", bundle_to_json(*bundle)},
                            {"force", true}});
      ASSERT_TRUE(r.ok()) << r.error().message;
      ASSERT_EQ(r->status, 201) << r->body;
    }
  }
  for (int a = 0; a < 8; ++a) fleet.start_agent("a" + std::to_string(a));

  auto terminal = [&] {
    return std::stoi(pg_one(*db, "SELECT count(*) FROM jobs WHERE state IN "
                              "('passed', 'rejected', 'error', 'cancelled')"));
  };
  // Three times: once more jobs have finished, kill the leader with -9, time the takeover,
  // and bring the killed one back (it comes back as a standby).
  for (int kill = 1; kill <= 3; ++kill) {
    ASSERT_TRUE(wait_until([&] { return terminal() >= kill * 40; }, std::chrono::seconds(90)))
        << "jobs stopped finishing before kill " << kill << fleet.logs();
    auto [who, epoch] = fleet.leader();
    ASSERT_GE(who, 0) << fleet.logs();
    const auto t0 = Clock::now();
    fleet.proc(static_cast<std::size_t>(who)).kill9();
    int next = -1;
    ASSERT_TRUE(wait_until(
        [&] {
          auto [w, e] = fleet.leader();
          if (e <= epoch || w < 0 || w == who) return false;
          HttpClient c(fleet.url(static_cast<std::size_t>(w)), Cluster::kUserToken);
          auto r = c.get("/api/v1/health");
          next = w;
          return r.ok() && r->status == 200;
        },
        std::chrono::seconds(20)))
        << "no standby took over after kill " << kill << fleet.logs();
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("kill %d: kfleetd %d -> %d took over in %.2f s\n", kill, who, next, took);
    EXPECT_LT(took, 10.0) << "failover must take under 10 s";
    fleet.start(static_cast<std::size_t>(who));
  }
  ASSERT_TRUE(wait_until([&] { return terminal() == kJobs; }, std::chrono::seconds(120)))
      << terminal() << " of " << kJobs << " jobs finished" << fleet.logs();

  // 0 jobs lost: every job passed, exactly one run each passed, nothing still running.
  EXPECT_EQ(pg_one(*db, "SELECT count(*) FROM jobs"), std::to_string(kJobs));
  EXPECT_EQ(pg_one(*db, "SELECT count(*) FROM jobs WHERE state = 'passed'"), std::to_string(kJobs))
      << fleet.logs();
  EXPECT_EQ(pg_one(*db, "SELECT count(*) FROM (SELECT job_id FROM runs WHERE outcome = 'passed' "
                     "GROUP BY job_id HAVING count(*) <> 1) t"),
            "0")
      << "a job passed twice or not at all";
  EXPECT_EQ(pg_one(*db, "SELECT count(*) FROM runs WHERE outcome = 'running'"), "0");
  // Event ids 1..N with no gap or duplicate, as the counter says.
  auto ev = pg_sql(*db, "SELECT count(*), count(DISTINCT id), max(id), (SELECT value FROM "
                        "counters WHERE name = 'event_id') FROM events");
  EXPECT_EQ(ev[0][0], ev[0][1]);
  EXPECT_EQ(ev[0][0], ev[0][2]) << "event ids have a gap";
  EXPECT_EQ(ev[0][2], ev[0][3]);
  // Each job's own events are seq 1..n; each passed run's events are seq 1..n, all stored.
  EXPECT_EQ(pg_one(*db, "SELECT count(*) FROM (SELECT job_id FROM events WHERE run_id = 0 GROUP BY "
                     "job_id HAVING count(*) <> max(seq) OR count(DISTINCT seq) <> count(*)) t"),
            "0")
      << "a job's event seqs have a gap or a duplicate";
  EXPECT_EQ(pg_one(*db, "SELECT count(*) FROM (SELECT r.id FROM runs r JOIN events e ON "
                     "e.job_id = r.job_id AND e.run_id = r.id WHERE r.outcome = 'passed' GROUP "
                     "BY r.id HAVING count(*) <> max(e.seq) OR max(e.seq) <> max(r.events_contiguous)) t"),
            "0")
      << "a run's event seqs have a gap or a duplicate";
  // No agent ever held two jobs: its runs, in order, each started after the one before ended.
  EXPECT_EQ(pg_one(*db, "SELECT count(*) FROM (SELECT started_ms, lag(finished_ms) OVER w AS pf, "
                     "lag(outcome) OVER w AS po FROM runs WINDOW w AS (PARTITION BY agent_id "
                     "ORDER BY id)) t WHERE po IS NOT NULL AND (po = 'running' OR started_ms < pf)"),
            "0")
      << "an agent held two runs at once";
  EXPECT_EQ(pg_one(*db, "SELECT epoch FROM kfleet_leader"), "4") << "three takeovers after the first";
  std::printf("runs: %s (lost to the kills and retried: %s)\n",
              pg_one(*db, "SELECT count(*) FROM runs").c_str(),
              pg_one(*db, "SELECT count(*) FROM runs WHERE outcome <> 'passed'").c_str());
}

// A leader whose lock connection dies (the database restarted it, a network cut) can no
// longer know it leads: it exits (status 3) for a supervisor to restart it as a standby, and
// the standby takes over. Nothing is written by two leaders.
TEST(PostgresHA, ALeaderThatLosesItsLockConnectionStepsDown) {
  auto server = store::ScratchPostgres::start();
  ASSERT_TRUE(server.ok()) << server.error().message;
  auto db = (*server)->create_database("kfleet");
  ASSERT_TRUE(db.ok()) << db.error().message;
  Fleet fleet(*db, 2);
  fleet.start(0);
  ASSERT_TRUE(wait_until([&] { return fleet.leader().first == 0; }, std::chrono::seconds(10)))
      << fleet.logs();
  fleet.start(1);
  // Only the connection holding the leader lock is cut.
  auto cut = pg_sql((*server)->url("postgres"),
                    "SELECT count(pg_terminate_backend(a.pid)) FROM pg_stat_activity a JOIN "
                    "pg_locks l ON l.pid = a.pid WHERE a.application_name = 'kfleetd-leader' "
                    "AND l.locktype = 'advisory' AND l.granted");
  ASSERT_EQ(cut[0][0], "1");
  EXPECT_EQ(fleet.proc(0).wait(10000), 3) << fleet.logs();
  ASSERT_TRUE(wait_until(
      [&] {
        auto [w, e] = fleet.leader();
        if (w != 1 || e != 2) return false;
        HttpClient c(fleet.url(1), Cluster::kUserToken);
        auto r = c.get("/api/v1/health");
        return r.ok() && r->status == 200;
      },
      std::chrono::seconds(10)))
      << fleet.logs();
  EXPECT_NE(fleet.logs().find("lost the leadership"), std::string::npos) << fleet.logs();
}

}  // namespace
}  // namespace kfleet::e2e
