// kfleet_bench --soak: a fleet with a long history, and a user beside it. A kfleetd holds
// --retired retired agents (enrolled, then retired through the API, as a fleet that scales
// to zero and loses spot instances leaves them) and a backlog of jobs no agent serves;
// --live simulated agents heartbeat and long-poll for leases as kfleet-agent does; one user
// client reads the job list, one job and the agent list in turn for --soak-s seconds. Prints
// the user's latency (p50, p99, max per request) and the agents', per backend.
#include "soak.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "bench_kfleetd.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/http_client.hpp"

namespace kfleet::bench {
namespace {

int int_arg(int argc, char** argv, const char* name, int dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return std::atoi(argv[i + 1]);
  return dflt;
}

std::string str_arg(int argc, char** argv, const char* name, const std::string& dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return argv[i + 1];
  return dflt;
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
  double pct(double q) {
    std::lock_guard<std::mutex> l(mu);
    if (ms.empty()) return 0;
    std::sort(ms.begin(), ms.end());
    return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * (ms.size() - 1) + 0.5))];
  }
  std::size_t count() {
    std::lock_guard<std::mutex> l(mu);
    return ms.size();
  }
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

struct SoakResult {
  std::map<std::string, Samples> user, agents;
  std::string load_before, load_after;
};

void soak_one(const std::string& bin, const std::string& backend, int seconds, int n_live,
              int n_retired, int n_standbys, SoakResult& out) {
  out.load_before = load_average();
  auto k = start_kfleetd(bin, backend,
                         {"--lease-ttl-ms", "60000", "--heartbeat-ms", "5000",
                          "--submit-rate-per-min", "0", "--auth-fail-rate-per-min", "0"},
                         n_standbys);
  std::fprintf(stderr, "soak: %s: kfleetd at %s (%zu standbys); %d retired agents...\n",
               backend.c_str(), k->url.c_str(), k->standbys.size(), n_retired);
  const auto t_seed = Clock::now();
  // History: agents that came and went.
  in_parallel(n_retired, 4, [&](int i) {
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
  std::int64_t one_job = 0;
  {
    HttpClient user(k->url, kUser);
    Bundle b;
    b.files.push_back({"k.cu", "__global__ void k() {}\n"});
    for (int i = 0; i < 200; ++i) {
      auto r = user.post_json(
          "/api/v1/jobs",
          {{"spec_yaml", "name: soak/" + std::to_string(i) +
                             "\ntarget: {gpu: H100}\nkernel:\n  family: attention\n  language: cuda\n"
                             "  sources: [k.cu]\n  defines: {I: " + std::to_string(i) + "}\n"},
           {"source_name", "soak.yaml"},
           {"bundle", bundle_to_json(b)},
           {"force", true}});
      if (!r.ok() || r->status != 201) {
        std::fprintf(stderr, "soak: submit failed\n");
        std::exit(1);
      }
      if (i == 100) one_job = (*r->json())["job"]["id"].get<std::int64_t>();
    }
  }
  std::vector<Agent> live(static_cast<std::size_t>(n_live));
  in_parallel(n_live, 4, [&](int i) {
    thread_local HttpClient enroller(k->url, kEnrol);
    live[static_cast<std::size_t>(i)] = enrol(enroller, "live-" + std::to_string(i), "L4");
  });
  std::fprintf(stderr, "soak: seeded in %.1f s; %d live agents for %d s\n", ms_since(t_seed) / 1000,
               n_live, seconds);

  std::atomic<bool> stop{false};
  // Made here: the agents' threads only add to them.
  out.agents["heartbeat"];
  out.agents["lease"];
  std::vector<std::thread> agents;
  for (const auto& a : live)
    agents.emplace_back([&, a] {
      HttpClient c(k->url, a.token);
      const std::string base = "/api/v1/agents/" + std::to_string(a.id);
      while (!stop.load()) {
        auto t = Clock::now();
        auto h = c.post_json(base + "/heartbeat", nlohmann::json::object());
        if (h.ok() && h->status == 200) out.agents["heartbeat"].add(ms_since(t));
        else ++out.agents["heartbeat"].errors;
        if (stop.load()) break;
        // The long-poll's own wait is the point of it; what is timed is the heartbeat.
        auto l = c.post_json(base + "/lease?wait_ms=5000", nlohmann::json::object(),
                             std::chrono::milliseconds(20000));
        if (!l.ok() || (l->status != 204 && l->status != 200)) ++out.agents["lease"].errors;
        else out.agents["lease"].add(0);
      }
    });
  // Let every agent make its first heartbeat and long-poll before the user starts.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  {
    HttpClient user(k->url, kUser);
    const std::vector<std::pair<std::string, std::string>> reads = {
        {"GET /api/v1/jobs", "/api/v1/jobs"},
        {"GET /api/v1/jobs/{id}", "/api/v1/jobs/" + std::to_string(one_job)},
        {"GET /api/v1/agents", "/api/v1/agents"}};
    const auto end = Clock::now() + std::chrono::seconds(seconds);
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
  stop = true;
  for (auto& t : agents) t.join();
  out.load_after = load_average();
}

void print(const std::string& backend, SoakResult& r, int seconds, int n_live, int n_retired) {
  std::printf("\n== soak on %s: %d live agents (heartbeat, long-poll 5 s), %d retired, %d s\n\n",
              backend.c_str(), n_live, n_retired, seconds);
  std::printf("| request | count | errors | p50 (ms) | p99 (ms) | max (ms) |\n|---|---:|---:|---:|---:|---:|\n");
  for (auto* side : {&r.user, &r.agents})
    for (auto& [name, s] : *side) {
      if (name == "lease") continue;  // its time is its wait
      std::printf("| %s%s | %zu | %ld | %.2f | %.2f | %.2f |\n", side == &r.user ? "user " : "agent ",
                  name.c_str(), s.count(), s.errors.load(), s.pct(0.5), s.pct(0.99), s.pct(1.0));
    }
  std::printf("| agent long-polls answered | %zu | %ld | | | |\n", r.agents["lease"].count(),
              r.agents["lease"].errors.load());
  const double p99 = r.user["all"].pct(0.99);
  std::printf("\nuser p99 %.2f ms: target <= 50 ms %s, goal <= 5 ms %s\n", p99,
              p99 <= 50 ? "ok" : "MISSED", p99 <= 5 ? "ok" : "missed");
  std::printf("load averages (1, 5, 15 min): %s before, %s after\n", r.load_before.c_str(),
              r.load_after.c_str());
}

}  // namespace

int run_soak(int argc, char** argv, const std::string& bin) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::puts(
          "kfleet_bench --soak [--soak-s 600] [--live 500] [--retired 10000] [--standbys 2]\n"
          "                    [--db sqlite|postgres|both|postgresql://...] [--kfleetd PATH]\n"
          "A fleet with a long history and a user beside it: --retired agents enrolled and\n"
          "retired, 200 queued jobs no agent serves, --live simulated agents heartbeating and\n"
          "long-polling (5 s), and one user client reading /api/v1/jobs, one job and\n"
          "/api/v1/agents in turn (about 20 reads a second) for --soak-s seconds. Prints p50,\n"
          "p99 and max per request, for the user and for the agents' heartbeats, per backend.\n"
          "Target: the user's p99 <= 50 ms (goal 5 ms).");
      return 0;
    }
  const int seconds = int_arg(argc, argv, "--soak-s", 600);
  const int n_live = int_arg(argc, argv, "--live", 500);
  const int n_retired = int_arg(argc, argv, "--retired", 10000);
  const int n_standbys = int_arg(argc, argv, "--standbys", 2);
  const std::string db = str_arg(argc, argv, "--db", "sqlite");
  if (seconds < 1 || n_live < 1 || n_retired < 0 || n_standbys < 0) {
    std::fprintf(stderr, "kfleet_bench --soak: --soak-s and --live must be >= 1, --retired and "
                         "--standbys >= 0\n");
    return 2;
  }
  std::vector<std::string> backends =
      db == "both" ? std::vector<std::string>{"sqlite", "postgres"} : std::vector<std::string>{db};
  std::map<std::string, SoakResult> results;
  for (const auto& b : backends) {
    soak_one(bin, b, seconds, n_live, n_retired, n_standbys, results[b]);
    print(b, results[b], seconds, n_live, n_retired);
    std::fflush(stdout);
  }
  if (backends.size() == 2) {
    auto& l = results["sqlite"].user["all"];
    auto& p = results["postgres"].user["all"];
    std::printf("\nuser p50 PostgreSQL / SQLite %.2fx, p99 %.2fx (one run, same machine)\n",
                l.pct(0.5) > 0 ? p.pct(0.5) / l.pct(0.5) : 0.0,
                l.pct(0.99) > 0 ? p.pct(0.99) / l.pct(0.99) : 0.0);
  }
  return 0;
}

}  // namespace kfleet::bench
