// kfleet_bench --soak: a large fleet, a long history, and a user beside them. A kfleetd holds
// --retired retired agents (enrolled, then retired through the API, as a fleet that scales to
// zero and loses spot instances leaves them) and a backlog of jobs no agent serves; --live
// simulated agents (swarm.hpp: one connection each, all on one thread of the bench) heartbeat
// and long-poll as kfleet-agent does, and run the jobs a submitter adds at --jobs-per-s, each
// held --run-s with heartbeats renewing its lease; one user client reads the job list, one
// job and the agent list in turn for --soak-s seconds. Prints the user's latency (p50, p99, max
// per request), the heartbeats', leases lost, and kfleetd's RSS, open files and CPU, per
// backend. On PostgreSQL, --takeover then kills the leader with -9 and times a standby's
// takeover and the agents' return.
#include "soak.hpp"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "bench_kfleetd.hpp"
#include "swarm.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/http_client.hpp"

namespace kfleet::bench {
namespace {

int int_arg(int argc, char** argv, const char* name, int dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return std::atoi(argv[i + 1]);
  return dflt;
}

double double_arg(int argc, char** argv, const char* name, double dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return std::atof(argv[i + 1]);
  return dflt;
}

std::string str_arg(int argc, char** argv, const char* name, const std::string& dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return argv[i + 1];
  return dflt;
}

bool flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], name)) return true;
  return false;
}

template <class T>
double pct(std::vector<T>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * (v.size() - 1) + 0.5))];
}

// Latencies of one kind of request, from any thread.
struct Samples {
  std::mutex mu;
  std::vector<double> ms;
  std::atomic<long> errors{0};
  void add(double v) {
    std::lock_guard<std::mutex> l(mu);
    ms.push_back(v);
  }
  double q(double p) {
    std::lock_guard<std::mutex> l(mu);
    return pct(ms, p);
  }
  std::size_t count() {
    std::lock_guard<std::mutex> l(mu);
    return ms.size();
  }
};

struct Options {
  int seconds = 600, live = 500, retired = 10000, standbys = 2, backlog = 200;
  double jobs_per_s = 2;
  int run_s = 10, heartbeat_ms = 5000, poll_wait_ms = 5000;
  bool takeover = false;
  int swarm_cpu = -1;  // >= 0: the swarm on this CPU alone, everything else on the others
};

Agent enrol(HttpClient& c, const std::string& name, const std::string& gpu) {
  return enrol_agent(c, name, "soak", gpu, "sm_89");
}

// Runs f(i) for i in [0, n) on `threads` threads.
template <class F>
void in_parallel(int n, int threads, F f) {
  std::atomic<int> next{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (int i = next++; i < n; i = next++) f(i);
    });
  for (auto& t : ts) t.join();
}

nlohmann::json job_body(const std::string& name, const std::string& gpu, int i) {
  Bundle b;
  b.files.push_back({"k.cu", "__global__ void k() {}\n"});
  return {{"spec_yaml", "name: " + name + "\ntarget: {gpu: " + gpu +
                            "}\nkernel:\n  family: attention\n  language: cuda\n"
                            "  sources: [k.cu]\n  defines: {I: " + std::to_string(i) + "}\n"},
          {"source_name", "soak.yaml"},
          {"bundle", bundle_to_json(b)},
          {"force", true}};
}

// What /proc says of a process: resident memory (KiB), open files, CPU ms so far.
struct ProcView {
  long rss_kib = 0;
  long fds = 0;
  double cpu_ms = 0;
};
ProcView view(pid_t pid) {
  ProcView v;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) v.rss_kib = std::atol(line.c_str() + 6);
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++v.fds;
    closedir(d);
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  std::getline(stat, s);
  const auto close = s.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(s.substr(close + 2));
    std::vector<std::string> f;
    for (std::string x; rest >> x && f.size() < 13;) f.push_back(x);
    if (f.size() >= 13)
      v.cpu_ms = (std::atof(f[11].c_str()) + std::atof(f[12].c_str())) * 1000.0 /
                 static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return v;
}

// A counter of kfleetd's /metrics (-1 when it cannot be read).
double metric_value(HttpClient& c, const std::string& name) {
  auto r = c.request("GET", "/metrics", "", "");
  if (!r.ok() || r->status != 200) return -1;
  const std::string key = "\n" + name + " ";
  const auto at = r->body.find(key);
  return at == std::string::npos ? -1 : std::strtod(r->body.c_str() + at + key.size(), nullptr);
}
std::int64_t metric(HttpClient& c, const std::string& name) {
  return static_cast<std::int64_t>(metric_value(c, name));
}
// The store's waits by statement (/metrics' kfleet_store_statement_*), from one scrape:
// statement -> {seconds, round trips, round trips of 1 ms or more}.
std::map<std::string, std::array<double, 3>> statement_waits(HttpClient& c) {
  std::map<std::string, std::array<double, 3>> out;
  auto r = c.request("GET", "/metrics", "", "");
  if (!r.ok() || r->status != 200) return out;
  const char* names[] = {"kfleet_store_statement_wait_seconds_total",
                         "kfleet_store_statement_round_trips_total",
                         "kfleet_store_statement_slow_round_trips_total"};
  for (int i = 0; i < 3; ++i) {
    const std::string key = std::string("\n") + names[i] + "{statement=\"";
    for (auto at = r->body.find(key); at != std::string::npos; at = r->body.find(key, at + 1)) {
      const auto v0 = at + key.size(), v1 = r->body.find("\"}", v0);
      if (v1 == std::string::npos) break;
      out[r->body.substr(v0, v1 - v0)][i] = std::strtod(r->body.c_str() + v1 + 2, nullptr);
    }
  }
  return out;
}

struct SoakResult {
  std::map<std::string, Samples> user;
  Samples submit;
  std::vector<float> heartbeat_ms;
  std::int64_t heartbeats = 0, heartbeat_errors = 0, polls = 0, poll_errors = 0, leases = 0,
               finishes = 0, finish_errors = 0, upload_errors = 0, lost_leases = 0,
               connect_errors = 0;
  std::int64_t jobs_submitted = 0, jobs_retried = 0, jobs_error = 0;
  std::int64_t waiting_at_end = -1, beats_heard = -1, beats_written = -1, passes = -1;
  long rss_seeded_kib = 0, rss_peak_kib = 0, fds_seeded = 0, fds_peak = 0;
  std::int64_t connected_peak = 0;
  double kfleetd_cpu_pct = 0, db_cpu_pct = 0;
  double store_wait_s = -1, wall_s = 0;  // the control plane's thread blocked on the database
  // That time by statement (/metrics' kfleet_store_statement_*), most first: the statement, its
  // seconds, and its round trips of 1 ms or more.
  struct Blocked {
    std::string statement;
    double s = 0;
    std::int64_t slow = 0, round_trips = 0;
  };
  std::vector<Blocked> blocked_by;
  std::string load_before, load_after;
  // --takeover
  double takeover_s = -1;
  std::vector<std::int64_t> back_after_ms;
  std::int64_t never_back = 0, takeover_errors = 0;
};

void soak_one(const std::string& bin, const std::string& backend, const Options& o,
              SoakResult& out) {
  out.load_before = load_average();
  auto k = start_kfleetd(bin, backend,
                         {"--lease-ttl-ms", "60000", "--heartbeat-ms",
                          std::to_string(o.heartbeat_ms), "--submit-rate-per-min", "0",
                          "--auth-fail-rate-per-min", "0"},
                         o.standbys);
  std::fprintf(stderr, "soak: %s: kfleetd at %s (%zu standbys); %d retired agents, %d jobs "
                       "queued for a GPU no agent serves...\n",
               backend.c_str(), k->url.c_str(), k->standbys.size(), o.retired, o.backlog);
  const auto t_seed = Clock::now();
  // History: agents that came and went.
  in_parallel(o.retired, 4, [&](int i) {
    thread_local HttpClient enroller(k->url, kEnrol), admin(k->url, kUser);
    const Agent a = enrol(enroller, "gone-" + std::to_string(i), "L4");
    auto r = admin.post_json("/api/v1/agents/" + std::to_string(a.id) + "/retire",
                             nlohmann::json::object());
    if (!r.ok() || r->status != 200) {
      std::fprintf(stderr, "soak: retire failed: %s\n",
                   r.ok() ? r->body.c_str() : r.error().message.c_str());
      std::exit(1);
    }
  });
  // A backlog for a GPU class no live agent serves, so the jobs a user reads are real.
  std::atomic<std::int64_t> one_job{0};
  in_parallel(o.backlog, 4, [&](int i) {
    thread_local HttpClient user(k->url, kUser);
    auto r = user.post_json("/api/v1/jobs", job_body("soak/" + std::to_string(i), "H100", i));
    if (!r.ok() || r->status != 201) {
      std::fprintf(stderr, "soak: submit failed: %s\n",
                   r.ok() ? r->body.c_str() : r.error().message.c_str());
      std::exit(1);
    }
    if (i == o.backlog / 2) one_job = (*r->json())["job"]["id"].get<std::int64_t>();
  });
  std::vector<Agent> live(static_cast<std::size_t>(o.live));
  in_parallel(o.live, 4, [&](int i) {
    thread_local HttpClient enroller(k->url, kEnrol);
    live[static_cast<std::size_t>(i)] = enrol(enroller, "live-" + std::to_string(i), "L4");
  });
  const ProcView seeded = view(k->leader.pid());
  out.rss_seeded_kib = seeded.rss_kib;
  out.fds_seeded = seeded.fds;
  std::fprintf(stderr, "soak: seeded in %.1f s (kfleetd RSS %.1f MiB); %d live agents for %d s\n",
               ms_since(t_seed) / 1000, seeded.rss_kib / 1024.0, o.live, o.seconds);

  SwarmOptions so;
  so.urls.push_back(k->url);
  for (const auto& s : k->standby_urls) so.urls.push_back(s);
  so.heartbeat_ms = o.heartbeat_ms;
  so.poll_wait_ms = o.poll_wait_ms;
  so.run_ms = o.run_s * 1000;
  so.cpu = o.swarm_cpu;
  Swarm swarm(live, so);
  swarm.start();
  // Every agent makes its first heartbeat and long poll (spread over a heartbeat period)
  // before anything is measured.
  HttpClient admin(k->url, kUser);
  const auto warm_end = Clock::now() + std::chrono::milliseconds(2 * o.heartbeat_ms);
  while (Clock::now() < warm_end)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::fprintf(stderr, "soak: %lld agents connected; measuring\n",
               static_cast<long long>(swarm.stats().connected.load()));
  const std::int64_t heard0 = metric(admin, "kfleet_heartbeats_total");
  const std::int64_t written0 = metric(admin, "kfleet_heartbeat_writes_total");
  const std::int64_t passes0 = metric(admin, "kfleet_scheduling_passes_total");
  const double wait0 = metric_value(admin, "kfleet_store_wait_seconds_total");
  const auto by0 = statement_waits(admin);
  const CpuMs cpu0 = cpu_ms(*k);
  const auto t0 = Clock::now();
  std::atomic<bool> stop{false};
  // kfleetd's resources, once a second.
  std::thread sampler([&] {
    while (!stop.load()) {
      const ProcView v = view(k->leader.pid());
      out.rss_peak_kib = std::max(out.rss_peak_kib, v.rss_kib);
      out.fds_peak = std::max(out.fds_peak, v.fds);
      out.connected_peak = std::max(out.connected_peak, swarm.stats().connected.load());
      for (int i = 0; i < 10 && !stop.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  // Work for the live agents: jobs they serve, at a steady rate.
  std::thread submitter([&] {
    if (o.jobs_per_s <= 0) return;
    HttpClient user(k->url, kUser);
    const auto period = std::chrono::duration<double>(1.0 / o.jobs_per_s);
    auto next = Clock::now();
    for (int i = 0; !stop.load(); ++i) {
      next += std::chrono::duration_cast<Clock::duration>(period);
      std::this_thread::sleep_until(next);
      const auto t = Clock::now();
      auto r = user.post_json("/api/v1/jobs", job_body("work/" + std::to_string(i), "L4", i));
      if (r.ok() && r->status == 201) {
        out.submit.add(ms_since(t));
        ++out.jobs_submitted;
      } else {
        ++out.submit.errors;
      }
    }
  });
  {
    HttpClient user(k->url, kUser);
    const std::vector<std::pair<std::string, std::string>> reads = {
        {"GET /api/v1/jobs", "/api/v1/jobs"},
        {"GET /api/v1/jobs/{id}", "/api/v1/jobs/" + std::to_string(one_job.load())},
        {"GET /api/v1/agents", "/api/v1/agents"}};
    const auto end = t0 + std::chrono::seconds(o.seconds);
    for (std::size_t i = 0; Clock::now() < end; ++i) {
      const auto& [name, path] = reads[i % reads.size()];
      auto t = Clock::now();
      auto r = user.get(path);
      const double ms = ms_since(t);
      if (r.ok() && r->status == 200) out.user[name].add(ms);
      else ++out.user[name].errors;
      out.user["all"].add(ms);
      // A person's client, not a load generator: about 20 reads a second.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  const double wall_ms = ms_since(t0);
  const CpuMs cpu1 = cpu_ms(*k);
  out.kfleetd_cpu_pct = 100.0 * (cpu1.kfleetd - cpu0.kfleetd) / wall_ms;
  out.db_cpu_pct = 100.0 * (cpu1.db_server - cpu0.db_server) / wall_ms;
  out.waiting_at_end = metric(admin, "kfleet_agents_waiting");
  const std::int64_t heard1 = metric(admin, "kfleet_heartbeats_total");
  const std::int64_t written1 = metric(admin, "kfleet_heartbeat_writes_total");
  const std::int64_t passes1 = metric(admin, "kfleet_scheduling_passes_total");
  const double wait1 = metric_value(admin, "kfleet_store_wait_seconds_total");
  if (wait0 >= 0 && wait1 >= 0) out.store_wait_s = wait1 - wait0;
  for (const auto& [what, now] : statement_waits(admin)) {
    const auto it = by0.find(what);
    const std::array<double, 3> was = it == by0.end() ? std::array<double, 3>{} : it->second;
    out.blocked_by.push_back({what, now[0] - was[0], static_cast<std::int64_t>(now[2] - was[2]),
                              static_cast<std::int64_t>(now[1] - was[1])});
  }
  std::sort(out.blocked_by.begin(), out.blocked_by.end(), [](const auto& a, const auto& b) { return a.s > b.s; });
  out.wall_s = wall_ms / 1000.0;
  if (heard0 >= 0 && heard1 >= 0) out.beats_heard = heard1 - heard0;
  if (written0 >= 0 && written1 >= 0) out.beats_written = written1 - written0;
  if (passes0 >= 0 && passes1 >= 0) out.passes = passes1 - passes0;
  stop = true;
  submitter.join();
  sampler.join();

  if (o.takeover && !k->standbys.empty()) {
    // The leader dies with the fleet on it: how long until a standby serves as leader, and
    // until each agent's heartbeats are answered again.
    std::fprintf(stderr, "soak: killing the leader (-9) with %d agents on it\n", o.live);
    const auto t_kill = Clock::now();
    swarm.stats().kill_at_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t_kill.time_since_epoch()).count();
    k->leader.kill9();
    bool led = false;
    while (!led && ms_since(t_kill) < 30'000) {
      for (const auto& url : k->standby_urls) {
        HttpClient c(url, kUser);
        auto r = c.get("/api/v1/health", std::chrono::milliseconds(500));
        if (r.ok() && r->status == 200 && r->headers["x-kfleet-role"] == "leader") {
          out.takeover_s = ms_since(t_kill) / 1000;
          led = true;
          break;
        }
      }
      if (!led) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Every agent beats every heartbeat period (or long-polls that long): give them that
    // and ten seconds more to come back.
    const auto& back = swarm.stats().back_after_ms;
    while (ms_since(t_kill) < o.heartbeat_ms + o.poll_wait_ms + 10'000) {
      if (std::all_of(back.begin(), back.end(), [](std::int64_t b) { return b >= 0; })) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  swarm.stop();
  const SwarmStats& st = swarm.stats();
  out.heartbeat_ms = st.heartbeat_ms;
  out.heartbeats = st.heartbeats;
  out.heartbeat_errors = st.heartbeat_errors;
  out.polls = st.polls;
  out.poll_errors = st.poll_errors;
  out.leases = st.leases;
  out.finishes = st.finishes;
  out.finish_errors = st.finish_errors;
  out.upload_errors = st.upload_errors;
  out.lost_leases = st.lost_leases;
  out.connect_errors = st.connect_errors;
  out.takeover_errors = st.takeover_errors;
  for (auto b : st.back_after_ms) {
    if (b >= 0) out.back_after_ms.push_back(b);
    else ++out.never_back;
  }
  // The kfleetd's side: jobs of the work that needed another attempt (a lease lost) or ended
  // in error, read from whichever kfleetd leads now.
  {
    std::vector<std::string> urls = {k->url};
    for (const auto& s : k->standby_urls) urls.push_back(s);
    std::string all;
    for (const auto& u : urls) all += (all.empty() ? "" : ",") + u;
    HttpClient c(all, kUser);
    std::int64_t before = 0;
    for (;;) {
      auto r = c.get("/api/v1/jobs?limit=1000" + (before ? "&before=" + std::to_string(before) : ""));
      if (!r.ok() || r->status != 200) break;
      auto jobs = (*r->json())["jobs"];
      if (jobs.empty()) break;
      for (const auto& j : jobs) {
        before = j["id"].get<std::int64_t>();
        if (j["name"].get<std::string>().rfind("work/", 0) != 0) continue;
        if (j["attempts"].get<int>() > 1) ++out.jobs_retried;
        if (j["state"] == "error") ++out.jobs_error;
      }
    }
  }
  out.load_after = load_average();
}

void print(const std::string& backend, SoakResult& r, const Options& o) {
  std::printf("\n== soak on %s: %d live agents (heartbeat, then a long poll of %d ms), %d "
              "retired, %d queued for a GPU no agent serves, work %.1f jobs/s held %d s, %d s\n\n",
              backend.c_str(), o.live, o.poll_wait_ms, o.retired, o.backlog, o.jobs_per_s,
              o.run_s, o.seconds);
  if (o.swarm_cpu >= 0)
    std::printf("the simulated agents on CPU %d alone; kfleetd, the database servers and the user on the "
                "others\n\n", o.swarm_cpu);
  std::printf("| request | count | errors | p50 (ms) | p99 (ms) | max (ms) |\n"
              "|---|---:|---:|---:|---:|---:|\n");
  for (auto& [name, s] : r.user)
    std::printf("| user %s | %zu | %ld | %.2f | %.2f | %.2f |\n", name.c_str(), s.count(),
                s.errors.load(), s.q(0.5), s.q(0.99), s.q(1.0));
  std::printf("| user POST /api/v1/jobs (the agents' work) | %zu | %ld | %.2f | %.2f | %.2f |\n",
              r.submit.count(), r.submit.errors.load(), r.submit.q(0.5), r.submit.q(0.99),
              r.submit.q(1.0));
  std::printf("| agent heartbeat | %lld | %lld | %.2f | %.2f | %.2f |\n",
              static_cast<long long>(r.heartbeats), static_cast<long long>(r.heartbeat_errors),
              pct(r.heartbeat_ms, 0.5), pct(r.heartbeat_ms, 0.99), pct(r.heartbeat_ms, 1.0));
  std::printf("| agent long polls answered | %lld | %lld | | | |\n",
              static_cast<long long>(r.polls), static_cast<long long>(r.poll_errors));
  std::printf("\nwork: %lld jobs submitted, %lld leased, %lld finished; leases lost: %lld seen by "
              "agents, %lld jobs retried or in error (%lld error); upload errors %lld, finish "
              "errors %lld, connect errors %lld\n",
              static_cast<long long>(r.jobs_submitted), static_cast<long long>(r.leases),
              static_cast<long long>(r.finishes), static_cast<long long>(r.lost_leases),
              static_cast<long long>(r.jobs_retried + r.jobs_error),
              static_cast<long long>(r.jobs_error), static_cast<long long>(r.upload_errors),
              static_cast<long long>(r.finish_errors), static_cast<long long>(r.connect_errors));
  std::printf("heartbeats and polls heard by kfleetd: %lld, of which wrote to the store: %lld; "
              "scheduling passes: %lld; agents waiting in a long poll at the end: %lld\n",
              static_cast<long long>(r.beats_heard), static_cast<long long>(r.beats_written),
              static_cast<long long>(r.passes), static_cast<long long>(r.waiting_at_end));
  const double per_conn =
      r.connected_peak > 0 ? (r.rss_peak_kib - r.rss_seeded_kib) / static_cast<double>(r.connected_peak) : 0;
  std::printf("kfleetd: RSS %.1f MiB seeded, %.1f MiB peak (%.1f KiB more per connected agent); "
              "open files %ld seeded, %ld peak (%lld agent connections); CPU %.1f%% of a core",
              r.rss_seeded_kib / 1024.0, r.rss_peak_kib / 1024.0, per_conn, r.fds_seeded,
              r.fds_peak, static_cast<long long>(r.connected_peak), r.kfleetd_cpu_pct);
  if (backend != "sqlite") std::printf("; PostgreSQL server CPU %.1f%%", r.db_cpu_pct);
  std::printf("\n");
  if (backend != "sqlite" && r.store_wait_s >= 0 && r.wall_s > 0)
    std::printf("kfleetd's control plane thread blocked on PostgreSQL: %.1f s of %.0f s (%.2f%%), "
                "serving none of its requests meanwhile (the users' pages are the read thread's)\n",
                r.store_wait_s, r.wall_s, 100.0 * r.store_wait_s / r.wall_s);
  if (!r.blocked_by.empty()) {
    std::printf("blocked most in:");
    for (std::size_t i = 0; i < r.blocked_by.size() && i < 6; ++i)
      std::printf("%s %s %.2f s (%lld round trips, %.2f ms each, %lld of 1 ms or more)", i ? ";" : "",
                  r.blocked_by[i].statement.c_str(), r.blocked_by[i].s,
                  static_cast<long long>(r.blocked_by[i].round_trips),
                  r.blocked_by[i].round_trips ? 1000.0 * r.blocked_by[i].s / r.blocked_by[i].round_trips : 0.0,
                  static_cast<long long>(r.blocked_by[i].slow));
    std::printf("\n");
  }
  if (r.takeover_s >= 0 || o.takeover) {
    std::printf("takeover: a standby served as leader %.2f s after the leader's kill -9; agents "
                "answered again after p50 %.2f s, p99 %.2f s, max %.2f s (%lld never); heartbeats "
                "and polls refused or cut meanwhile: %lld (not counted above)\n",
                r.takeover_s, pct(r.back_after_ms, 0.5) / 1000, pct(r.back_after_ms, 0.99) / 1000,
                pct(r.back_after_ms, 1.0) / 1000, static_cast<long long>(r.never_back),
                static_cast<long long>(r.takeover_errors));
  }
  const double p99 = r.user["all"].q(0.99);
  const double hb99 = pct(r.heartbeat_ms, 0.99);
  std::printf("\nuser p99 %.2f ms: goal <= 5 ms %s; heartbeat p99 %.2f ms: goal <= 20 ms %s; "
              "errors %s; leases lost %s\n",
              p99, p99 <= 5 ? "ok" : "MISSED", hb99, hb99 <= 20 ? "ok" : "MISSED",
              r.heartbeat_errors + r.poll_errors + r.user["all"].errors == 0 ? "none" : "SOME",
              r.lost_leases + r.jobs_retried + r.jobs_error == 0 ? "none" : "SOME");
  std::printf("load averages (1, 5, 15 min): %s before, %s after\n", r.load_before.c_str(),
              r.load_after.c_str());
}

}  // namespace

int run_soak(int argc, char** argv, const std::string& bin) {
  if (flag(argc, argv, "--help") || flag(argc, argv, "-h")) {
    std::puts(
        "kfleet_bench --soak [--soak-s 600] [--live 500] [--retired 10000] [--backlog 200]\n"
        "                    [--jobs-per-s 2] [--run-s 10] [--heartbeat-ms 5000]\n"
        "                    [--poll-wait-ms 5000] [--standbys 2] [--takeover]\n"
        "                    [--db sqlite|postgres|both|postgresql://...] [--kfleetd PATH]\n"
        "A fleet with a long history and a user beside it: --retired agents enrolled and\n"
        "retired, --backlog jobs queued for a GPU no agent serves, --live simulated agents\n"
        "(one connection each, all on one thread of the bench) heartbeating and long-polling,\n"
        "and running the jobs a submitter adds at --jobs-per-s, each held --run-s seconds with\n"
        "heartbeats renewing its lease; one user client reads /api/v1/jobs, one job and\n"
        "/api/v1/agents in turn (about 20 reads a second) for --soak-s seconds. Prints p50,\n"
        "p99 and max per request, for the user and the agents' heartbeats, the leases lost,\n"
        "and kfleetd's RSS, open files and CPU, per backend. Goals: the user's p99 <= 5 ms,\n"
        "the heartbeats' <= 20 ms, no errors, no lease lost.\n"
        "--takeover (PostgreSQL, with standbys): then kills the leader with -9 and times a\n"
        "standby's takeover and the agents' return.\n"
        "--swarm-cpu N: the simulated agents' thread runs on CPU N alone and everything else\n"
        "(kfleetd, the database servers, the user and the submitter) on the other CPUs, as\n"
        "when the agents are other machines: what kfleetd holds on the cores it does not share\n"
        "with the load generator.");
    return 0;
  }
  Options o;
  o.seconds = int_arg(argc, argv, "--soak-s", 600);
  o.live = int_arg(argc, argv, "--live", 500);
  o.retired = int_arg(argc, argv, "--retired", 10000);
  o.standbys = int_arg(argc, argv, "--standbys", 2);
  o.backlog = int_arg(argc, argv, "--backlog", 200);
  o.jobs_per_s = double_arg(argc, argv, "--jobs-per-s", 2);
  o.run_s = int_arg(argc, argv, "--run-s", 10);
  o.heartbeat_ms = int_arg(argc, argv, "--heartbeat-ms", 5000);
  o.poll_wait_ms = int_arg(argc, argv, "--poll-wait-ms", 5000);
  o.takeover = flag(argc, argv, "--takeover");
  o.swarm_cpu = int_arg(argc, argv, "--swarm-cpu", -1);
  const std::string db = str_arg(argc, argv, "--db", "sqlite");
  if (o.seconds < 1 || o.live < 1 || o.retired < 0 || o.standbys < 0 || o.backlog < 2 ||
      o.jobs_per_s < 0 || o.run_s < 0 || o.heartbeat_ms < 100 || o.poll_wait_ms < 0 || o.swarm_cpu < -1) {
    std::fprintf(stderr, "kfleet_bench --soak: --soak-s and --live must be >= 1, --backlog >= 2, "
                         "--heartbeat-ms >= 100, --swarm-cpu a CPU's number, the others >= 0\n");
    return 2;
  }
  if (o.swarm_cpu >= 0) {
    // Every process and thread made from here on inherits the other CPUs; the swarm's thread
    // then takes swarm_cpu alone (Swarm::start).
    cpu_set_t all, rest;
    CPU_ZERO(&all);
    CPU_ZERO(&rest);
    if (sched_getaffinity(0, sizeof all, &all) != 0 || !CPU_ISSET(o.swarm_cpu, &all) || CPU_COUNT(&all) < 2) {
      std::fprintf(stderr, "kfleet_bench --soak: --swarm-cpu %d: this process may run on %d CPUs, and N must be "
                           "one of them with another left for kfleetd\n", o.swarm_cpu, CPU_COUNT(&all));
      return 2;
    }
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &all) && c != o.swarm_cpu) CPU_SET(c, &rest);
    if (sched_setaffinity(0, sizeof rest, &rest) != 0) {
      std::perror("kfleet_bench --soak: sched_setaffinity");
      return 2;
    }
  }
  std::vector<std::string> backends =
      db == "both" ? std::vector<std::string>{"sqlite", "postgres"} : std::vector<std::string>{db};
  std::map<std::string, SoakResult> results;
  for (const auto& b : backends) {
    soak_one(bin, b, o, results[b]);
    print(b, results[b], o);
    std::fflush(stdout);
  }
  if (backends.size() == 2) {
    auto& l = results["sqlite"].user["all"];
    auto& p = results["postgres"].user["all"];
    std::printf("\nuser p50 PostgreSQL / SQLite %.2fx, p99 %.2fx (one run, same machine)\n",
                l.q(0.5) > 0 ? p.q(0.5) / l.q(0.5) : 0.0, l.q(0.99) > 0 ? p.q(0.99) / l.q(0.99) : 0.0);
  }
  return 0;
}

}  // namespace kfleet::bench
