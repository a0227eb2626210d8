// kfleet_bench: how fast the control plane is, through real HTTP against a real kfleetd on a
// SQLite file. Agents here are simulated: threads that enrol, long-poll for leases and finish
// each job at once, so what is measured is kfleetd (HTTP, scheduler, store), not a kernel.
//   kfleet_bench [--agents 100] [--jobs 10000] [--latency-samples 300] [--events 200000]
//                [--db sqlite|postgres|both|postgresql://...]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kfleet/common/bundle.hpp"
#include "backend_compare.hpp"
#include "kfleet/common/http_client.hpp"
#include "support.hpp"

namespace {

using namespace kfleet;
using Clock = std::chrono::steady_clock;
constexpr const char* kUser = "kft_bench-admin-token-0d9e4f1a";  // kfleetd's first admin token
constexpr const char* kEnrol = "kfe_bench-enrol-token";

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * (v.size() - 1) + 0.5))];
}

nlohmann::json job_body(int i) {
  Bundle b;
  b.files.push_back({"k.cu", "__global__ void k() {}\n"});
  return {{"spec_yaml", "name: bench/" + std::to_string(i) +
                            "\ntarget: {gpu: L4}\nkernel:\n  family: attention\n  language: cuda\n"
                            "  sources: [k.cu]\n  defines: {I: " + std::to_string(i) + "}\n"
                            "simulate: {time_us: 10, stage_ms: 0}\n"},
          {"source_name", "bench.yaml"},
          {"bundle", bundle_to_json(b)},
          {"force", true}};
}

struct Agent {
  std::int64_t id = 0;
  std::string token;
};

Agent enrol(const std::string& url, const std::string& name) {
  HttpClient c(url, kEnrol);
  auto r = c.post_json("/api/v1/agents/enrol",
                       {{"name", name}, {"region", "bench"}, {"backend", "simulated"},
                        {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}, {"simulated", true}}}}});
  if (!r.ok() || r->status != 201) {
    std::fprintf(stderr, "bench: enrol failed: %s\n", r.ok() ? r->body.c_str() : r.error().message.c_str());
    std::exit(1);
  }
  auto j = *r->json();
  return {j["agent_id"].get<std::int64_t>(), j["token"].get<std::string>()};
}

// Long-polls once; on a lease, finishes it at once. Returns false on 204.
bool take_one(HttpClient& c, const Agent& a, int wait_ms, Clock::time_point* leased_at = nullptr) {
  auto r = c.post_json("/api/v1/agents/" + std::to_string(a.id) + "/lease?wait_ms=" +
                           std::to_string(wait_ms), nlohmann::json::object(),
                       std::chrono::milliseconds(wait_ms + 10000));
  if (!r.ok() || r->status != 200) return false;
  if (leased_at) *leased_at = Clock::now();
  auto l = (*r->json())["lease"];
  auto f = c.post_json("/api/v1/runs/" + std::to_string(l["run_id"].get<std::int64_t>()) + "/finish",
                       {{"fencing_token", l["fencing_token"]},
                        {"verdict", {{"outcome", "passed"}, {"simulated", true}}}});
  if (!f.ok() || f->status != 200) std::fprintf(stderr, "bench: finish failed\n");
  return true;
}

void submit_many(const std::string& url, int from, int to, int threads) {
  std::atomic<int> next{from};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      HttpClient c(url, kUser);
      for (int i = next++; i < to; i = next++) {
        auto r = c.post_json("/api/v1/jobs", job_body(i));
        if (!r.ok() || r->status != 201) {
          std::fprintf(stderr, "bench: submit failed: %s\n", r.ok() ? r->body.c_str() : r.error().message.c_str());
          std::exit(1);
        }
      }
    });
  for (auto& t : ts) t.join();
}

std::string sarg(int argc, char** argv, const char* name, const char* dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return argv[i + 1];
  return dflt;
}

int arg(int argc, char** argv, const char* name, int dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return std::atoi(argv[i + 1]);
  return dflt;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::puts("kfleet_bench [--agents N] [--jobs N] [--latency-samples N] [--events N]\n"
                "             [--db sqlite|postgres|both|postgresql://...]\n"
                "Starts kfleetd on a temporary SQLite file and measures submit-to-lease latency,\n"
                "scheduling throughput and event ingestion through HTTP; prints a table.\n"
                "--db postgres: kfleetd on a scratch PostgreSQL server (initdb in a temp dir);\n"
                "--db both: both runs, then a table of PostgreSQL / SQLite ratios;\n"
                "--db postgresql://...: an existing (empty) database.");
      return 0;
    }
  const int n_agents = arg(argc, argv, "--agents", 100);
  const int n_jobs = arg(argc, argv, "--jobs", 10000);
  const int n_lat = arg(argc, argv, "--latency-samples", 300);
  const int n_events = arg(argc, argv, "--events", 200000);
  const std::string backend = sarg(argc, argv, "--db", "sqlite");
  if (backend == "both") return kfleet::bench::compare_backends(argc, argv);
  const std::string dir = e2e::make_temp_dir("kfleet-bench");
  std::shared_ptr<void> pg_server;  // a scratch PostgreSQL server, when --db postgres
  const std::string db = kfleet::bench::backend_db(backend, dir, pg_server);
  e2e::Proc kfleetd = e2e::Proc::spawn(
      {KFLEETD_BIN, "--listen", "127.0.0.1:0", "--db", db, "--port-file",
       dir + "/port", "--lease-ttl-ms", "60000", "--submit-rate-per-min", "0"},
      dir + "/kfleetd.log",
      {{"KFLEET_LOG", "warn"}, {"KFLEET_ADMIN_TOKEN", kUser}, {"KFLEET_ENROL_TOKEN", kEnrol}});
  if (!e2e::wait_until([&] { return std::filesystem::exists(dir + "/port"); },
                       std::chrono::seconds(20))) {
    std::fprintf(stderr, "bench: kfleetd did not start:\n%s\n", kfleetd.log().c_str());
    return 1;
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(std::stoi(e2e::read_file(dir + "/port")));
  std::printf("kfleet_bench: kfleetd at %s, %s %s\n", url.c_str(),
              backend == "sqlite" ? "SQLite file" : "PostgreSQL", db.c_str());

  // 1. Submit-to-lease latency: one agent waiting in a long-poll; a job is submitted; the
  //    time until the agent holds the lease.
  std::vector<double> lat;
  {
    Agent a = enrol(url, "lat");
    HttpClient user(url, kUser), ac(url, a.token);
    for (int i = 0; i < n_lat; ++i) {
      Clock::time_point leased{};
      std::thread agent([&] { take_one(ac, a, 10000, &leased); });
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let the poll arrive first
      auto t0 = Clock::now();
      auto r = user.post_json("/api/v1/jobs", job_body(1000000 + i));
      agent.join();
      if (!r.ok() || r->status != 201) return 1;
      lat.push_back(std::chrono::duration<double, std::milli>(leased - t0).count());
    }
  }

  // 2. Scheduling throughput: queue n_jobs, then n_agents drain it through HTTP.
  auto ts = Clock::now();
  submit_many(url, 0, n_jobs, 4);
  const double submit_ms = ms_since(ts);
  std::vector<Agent> agents;
  for (int i = 0; i < n_agents; ++i) agents.push_back(enrol(url, "a" + std::to_string(i)));
  std::atomic<int> done{0};
  auto t0 = Clock::now();
  {
    std::vector<std::thread> threads;
    for (const auto& a : agents)
      threads.emplace_back([&, a] {
        HttpClient c(url, a.token);
        while (done.load() < n_jobs)
          if (take_one(c, a, 1000)) ++done;
      });
    for (auto& t : threads) t.join();
  }
  const double drain_ms = ms_since(t0);

  // 3. Event ingestion: one run, batches of 500 events from 4 connections.
  double ingest_ms = 0;
  {
    HttpClient user(url, kUser);
    user.post_json("/api/v1/jobs", job_body(2000000));
    Agent a = enrol(url, "ingest");
    HttpClient c(url, a.token);
    auto r = c.post_json("/api/v1/agents/" + std::to_string(a.id) + "/lease?wait_ms=10000",
                         nlohmann::json::object(), std::chrono::milliseconds(20000));
    auto l = (*r->json())["lease"];
    const std::string path = "/api/v1/runs/" + std::to_string(l["run_id"].get<std::int64_t>()) + "/events";
    const int batch = 500, batches = n_events / batch;
    std::vector<std::string> bodies;  // built before timing: the client's JSON work is not kfleetd's
    for (int b = 0; b < batches; ++b) {
      nlohmann::json evs = nlohmann::json::array();
      for (int i = 0; i < batch; ++i)
        evs.push_back({{"seq", b * batch + i + 1}, {"ts_ms", 0}, {"type", "bench.samples"},
                       {"data", {{"i", i}, {"samples_us", {10.1, 10.2, 10.3}}}}});
      bodies.push_back(nlohmann::json{{"fencing_token", l["fencing_token"]}, {"events", evs}}.dump());
    }
    std::atomic<int> next{0};
    auto ti = Clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        HttpClient hc(url, a.token);
        for (int b = next++; b < batches; b = next++) {
          auto rr = hc.request("POST", path, bodies[b], "application/json");
          if (!rr.ok() || rr->status != 200) std::fprintf(stderr, "bench: ingest failed\n");
        }
      });
    for (auto& t : threads) t.join();
    ingest_ms = ms_since(ti);
  }

  const double p50 = pct(lat, 0.5), p99 = pct(lat, 0.99);
  const double jobs_per_s = n_jobs / (drain_ms / 1000.0);
  const double events_per_s = (n_events / 500 * 500) / (ingest_ms / 1000.0);
  std::printf("\n| metric | measured | target | |\n|---|---:|---:|---|\n");
  std::printf("| submit-to-lease latency p50 (%d samples) | %.2f ms | <= 5 ms | %s |\n", n_lat, p50,
              p50 <= 5 ? "ok" : "MISSED");
  std::printf("| submit-to-lease latency p99 | %.2f ms | | |\n", p99);
  std::printf("| scheduling throughput (%d agents, %d queued jobs) | %.0f jobs/s | >= 1000 jobs/s | %s |\n",
              n_agents, n_jobs, jobs_per_s, jobs_per_s >= 1000 ? "ok" : "MISSED");
  std::printf("| job submission (4 clients, YAML parsed server-side) | %.0f jobs/s | | |\n",
              n_jobs / (submit_ms / 1000.0));
  std::printf("| event ingestion (batches of 500, 4 clients) | %.0f events/s | >= 100000 events/s | %s |\n",
              events_per_s, events_per_s >= 100000 ? "ok" : "MISSED");
  kfleetd.terminate(5000);
  std::filesystem::remove_all(dir);
  return 0;
}
