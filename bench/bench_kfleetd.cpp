#include "bench_kfleetd.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>

#include <signal.h>
#include <unistd.h>

#ifdef KFLEET_HAVE_POSTGRESQL
#include "kfleet/common/http_client.hpp"
#include "kfleet/store/pg_scratch.hpp"
#endif

namespace kfleet::bench {

Kfleetd::~Kfleetd() {
  for (auto& s : standbys) s.terminate(5000);
  leader.terminate(5000);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

std::vector<std::string>& scratch_pg_settings() {
  static std::vector<std::string> settings;
  return settings;
}

namespace {

#ifdef KFLEET_HAVE_POSTGRESQL
// A scratch PostgreSQL server with these settings (postgres -c) and its database "bench";
// exits the bench when either cannot be made.
std::pair<std::shared_ptr<kfleet::store::ScratchPostgres>, std::string> start_scratch(
    const std::vector<std::string>& settings) {
  auto s = kfleet::store::ScratchPostgres::start(settings);
  if (!s.ok()) {
    std::fprintf(stderr, "bench: %s\n", s.error().message.c_str());
    std::exit(1);
  }
  auto url = (*s)->create_database("bench");
  if (!url.ok()) {
    std::fprintf(stderr, "bench: %s\n", url.error().message.c_str());
    std::exit(1);
  }
  return {std::shared_ptr<kfleet::store::ScratchPostgres>(std::move(*s)), *url};
}
#endif

// What --db names: a SQLite file in the bench's temp dir ("sqlite"), a scratch PostgreSQL
// server started for the run ("postgres"), or an existing server (a postgresql:// URL).
// Returns kfleetd's --db value, keeping a scratch server alive in `keep`; exits on errors.
std::string backend_db(const std::string& backend, const std::string& dir,
                       std::shared_ptr<void>& keep) {
  if (backend == "sqlite") return dir + "/bench.db";
  if (backend.rfind("postgresql://", 0) == 0 || backend.rfind("postgres://", 0) == 0) {
    // The URL goes on kfleetd's command line and into the bench's output: a password in it
    // would be in `ps` and the logs. libpq reads PGPASSWORD / ~/.pgpass instead.
    const auto rest = backend.substr(backend.find("://") + 3);
    const auto at = rest.find('@');
    if (at != std::string::npos && rest.substr(0, at).find(':') != std::string::npos) {
      std::fprintf(stderr,
                   "bench: the --db URL carries a password; leave it out and set PGPASSWORD "
                   "(or a ~/.pgpass entry) instead\n");
      std::exit(2);
    }
    return backend;
  }
  if (backend == "postgres") {
#ifdef KFLEET_HAVE_POSTGRESQL
    auto [server, url] = start_scratch(scratch_pg_settings());
    keep = server;
    return url;
#else
    std::fprintf(stderr, "bench: this build has no PostgreSQL support (-DKFLEET_WITH_POSTGRESQL=OFF)\n");
    std::exit(2);
#endif
  }
  std::fprintf(stderr,
               "bench: --db wants sqlite, postgres (a scratch server), both, or a "
               "postgresql:// URL; got '%s'\n",
               backend.c_str());
  std::exit(2);
}

}  // namespace

std::unique_ptr<Kfleetd> start_kfleetd(const std::string& bin, const std::string& backend,
                                       const std::vector<std::string>& extra, int standbys,
                                       bool profile) {
  auto k = std::make_unique<Kfleetd>();
  k->dir = e2e::make_temp_dir("kfleet-bench");
#ifdef KFLEET_HAVE_POSTGRESQL
  if (backend == "postgres" && profile) {
    auto settings = scratch_pg_settings();
    settings.insert(settings.end(), {"shared_preload_libraries=pg_stat_statements",
                                     "pg_stat_statements.track=all"});
    auto [server, url] = start_scratch(settings);
    k->pg_server = server;
    k->db = url;
    k->pg_query = [server](const std::string& sql) { return server->query("bench", sql); };
    if (auto r = k->pg_query("CREATE EXTENSION pg_stat_statements"); !r.ok()) {
      std::fprintf(stderr, "bench: %s\n", r.error().message.c_str());
      std::exit(1);
    }
  }
#endif
  if (k->db.empty()) k->db = backend_db(backend, k->dir, k->pg_server);
#ifdef KFLEET_HAVE_POSTGRESQL
  if (k->pg_server)
    k->db_server_pid =
        std::static_pointer_cast<kfleet::store::ScratchPostgres>(k->pg_server)->pid();
#endif
  const std::map<std::string, std::string> env = {
      {"KFLEET_LOG", "warn"}, {"KFLEET_ADMIN_TOKEN", kUser}, {"KFLEET_ENROL_TOKEN", kEnrol}};
  auto spawn = [&](const std::string& name) {
    std::vector<std::string> argv = {bin, "--listen", "127.0.0.1:0", "--db", k->db,
                                     "--port-file", k->dir + "/" + name + ".port"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return e2e::Proc::spawn(argv, k->dir + "/" + name + ".log", env);
  };
  auto wait_port = [&](const std::string& name, e2e::Proc& p) {
    const std::string f = k->dir + "/" + name + ".port";
    if (!e2e::wait_until([&] { return std::filesystem::exists(f); }, std::chrono::seconds(30))) {
      std::fprintf(stderr, "bench: kfleetd (%s) did not start:\n%s\n", name.c_str(),
                   p.log().c_str());
      std::exit(1);
    }
    return std::stoi(e2e::read_file(f));
  };
  k->leader = spawn("leader");
  k->url = "http://127.0.0.1:" + std::to_string(wait_port("leader", k->leader));
  if (k->db.rfind("postgres", 0) == 0) {
    for (int i = 0; i < standbys; ++i) {
      const std::string name = "standby" + std::to_string(i + 1);
      k->standbys.push_back(spawn(name));
      k->standby_urls.push_back("http://127.0.0.1:" +
                                std::to_string(wait_port(name, k->standbys.back())));
    }
  }
  return k;
}

void reset_pg_profile(Kfleetd& k) {
  if (k.pg_query) (void)k.pg_query("SELECT pg_stat_statements_reset()");
}

void print_pg_profile(Kfleetd& k, const std::string& phase, double units, const char* unit) {
  if (!k.pg_query) return;
  // Only the kfleetd connections' statements (the bench's own reset and reads are not).
  const std::string mine = "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
                           "WHERE d.datname = 'bench' AND s.query NOT LIKE '%pg_stat_statements%'";
  auto total = k.pg_query("SELECT COALESCE(SUM(calls), 0), "
                          "COALESCE(ROUND(SUM(total_exec_time)::numeric, 1), 0) " + mine);
  auto top = k.pg_query(
      "SELECT calls, ROUND(total_exec_time::numeric, 1), ROUND(mean_exec_time::numeric, 4), "
      "ROUND((calls / " + std::to_string(units) + ")::numeric, 2), "
      "LEFT(REGEXP_REPLACE(query, '\\s+', ' ', 'g'), 150) " + mine +
      " ORDER BY total_exec_time DESC LIMIT 20");
  if (!total.ok() || !top.ok()) {
    std::printf("(no PostgreSQL profile: %s)\n",
                (!total.ok() ? total.error() : top.error()).message.c_str());
    return;
  }
  double calls = 0, ms = 0;
  std::sscanf(total->c_str(), "%lf | %lf", &calls, &ms);
  std::printf("\n-- PostgreSQL profile, %s: %.0f statements for %.0f %s (%.1f per %s), "
              "%.1f ms executing in the server (%.3f ms per %s)\n",
              phase.c_str(), calls, units, unit, calls / units, unit, ms, ms / units, unit);
  std::printf("calls | total ms | mean ms | per %s | statement\n%s", unit, top->c_str());
}

std::int64_t round_trips(Kfleetd& k) {
  HttpClient c(k.url, kUser);
  auto r = c.request("GET", "/metrics", "", "");
  if (!r.ok() || r->status != 200) return 0;
  const std::string key = "\nkfleet_store_round_trips_total ";
  const auto at = r->body.find(key);
  return at == std::string::npos ? 0 : std::atoll(r->body.c_str() + at + key.size());
}

namespace {

// A process's ppid and CPU ticks from /proc/PID/stat: its own (utime + stime) and, when
// `reaped`, its reaped children's too (cutime + cstime). False when it is gone.
bool proc_stat(const std::string& pid, long* ppid, long long* ticks, bool reaped) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string s;
  if (!std::getline(in, s)) return false;
  const auto close = s.rfind(')');  // the command may hold spaces and parentheses
  if (close == std::string::npos) return false;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  std::vector<std::string> f;
  while (rest >> field && f.size() < 15) f.push_back(field);
  if (f.size() < 15) return false;
  *ppid = std::atol(f[1].c_str());
  *ticks = std::atoll(f[11].c_str()) + std::atoll(f[12].c_str());
  if (reaped) *ticks += std::atoll(f[13].c_str()) + std::atoll(f[14].c_str());
  return true;
}

// A server's postmaster and the processes it started (none for pid 0).
std::vector<pid_t> server_processes(int postmaster) {
  std::vector<pid_t> out;
  if (postmaster <= 0) return out;
  out.push_back(postmaster);
  long ppid = 0;
  long long ticks = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (proc_stat(name, &ppid, &ticks, false) && ppid == postmaster)
      out.push_back(static_cast<pid_t>(std::atol(name.c_str())));
  }
  return out;
}

}  // namespace

CpuMs cpu_ms(const Kfleetd& k) {
  const double ms_per_tick = 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  CpuMs out;
  long ppid = 0;
  long long ticks = 0;
  if (proc_stat(std::to_string(k.leader.pid()), &ppid, &ticks, false))
    out.kfleetd = static_cast<double>(ticks) * ms_per_tick;
  if (k.db_server_pid <= 0) return out;
  long long total = 0;
  for (pid_t p : server_processes(k.db_server_pid))
    if (proc_stat(std::to_string(p), &ppid, &ticks, true)) total += ticks;
  out.db_server = static_cast<double>(total) * ms_per_tick;
  return out;
}

void signal_all(const Kfleetd& k, int sig) {
  std::vector<pid_t> pids;
  for (const auto* p : {&k.leader}) pids.push_back(p->pid());
  for (const auto& p : k.standbys) pids.push_back(p.pid());
  std::vector<pid_t> server = server_processes(k.db_server_pid);
  // Stopping: the clients first, then the server they talk to; waking, the other way round.
  if (sig == SIGCONT) std::swap(pids, server);
  // A bench that exits on an error (std::exit: no destructors) wakes what it stopped, so that
  // nothing it started is left stopped for good.
  static std::vector<pid_t> stopped;
  static const bool wake_at_exit = [] {
    std::atexit([] {
      for (pid_t p : stopped) ::kill(p, SIGCONT);
    });
    return true;
  }();
  (void)wake_at_exit;
  for (const auto& group : {pids, server})
    for (pid_t p : group) {
      if (p <= 0) continue;
      ::kill(p, sig);
      if (sig == SIGSTOP) stopped.push_back(p);
      else stopped.erase(std::remove(stopped.begin(), stopped.end(), p), stopped.end());
    }
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  if (!(in >> a >> b >> c)) return "unknown";
  return a + " " + b + " " + c;
}

Agent enrol_agent(HttpClient& c, const std::string& name, const std::string& region,
                  const std::string& gpu, const std::string& arch) {
  auto r = c.post_json("/api/v1/agents/enrol",
                       {{"name", name}, {"region", region}, {"backend", "simulated"},
                        {"gpus", {{{"gpu_class", gpu}, {"arch", arch}, {"simulated", true}}}}});
  if (!r.ok() || r->status != 201) {
    std::fprintf(stderr, "%s: enrol failed: %s\n", region.c_str(),
                 r.ok() ? r->body.c_str() : r.error().message.c_str());
    std::exit(1);
  }
  auto j = *r->json();
  return {j["agent_id"].get<std::int64_t>(), j["token"].get<std::string>()};
}

}  // namespace kfleet::bench
