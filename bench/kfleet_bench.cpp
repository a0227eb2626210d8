// kfleet_bench: how fast the control plane is, through real HTTP against a real kfleetd on a
// SQLite file. Agents here are simulated: threads that enrol, long-poll for leases and finish
// each job at once, so what is measured is kfleetd (HTTP, scheduler, store), not a kernel.
//   kfleet_bench [--agents 100] [--jobs 10000] [--depths 10000,50000] [--latency-samples 300]
//                [--events 200000] [--kfleetd PATH] [--db sqlite|postgres|both|postgresql://...]
// Every figure is taken at each queue depth, each on a fresh kfleetd and database: the backlog
// is queued first (jobs for a GPU class no agent serves yet), latency and event ingestion are
// measured beside it, then agents for the backlog's class enrol and drain it. --db both holds
// SQLite's and PostgreSQL's kfleetd at once and alternates their latency samples in blocks, so
// that the ratio of the two compares them under the same machine (a shared VM's slow patches
// last seconds to minutes; run one after the other, the p99 ratio moved between 0.8x and 2.2x).
#include <algorithm>
#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_kfleetd.hpp"
#include "bench_report.hpp"
#include "soak.hpp"
#include "swarm.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/http_client.hpp"
#include "support.hpp"

namespace {

using namespace kfleet;
using kfleet::bench::Figures;
using kfleet::bench::Agent;
using kfleet::bench::Clock;
using kfleet::bench::kEnrol;
using kfleet::bench::kUser;
using kfleet::bench::ms_since;

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * (v.size() - 1) + 0.5))];
}

nlohmann::json job_body(int i, const std::string& gpu = "L4") {
  Bundle b;
  b.files.push_back({"k.cu", "__global__ void k() {}\n"});
  return {{"spec_yaml", "name: bench/" + std::to_string(i) +
                            "\ntarget: {gpu: " + gpu + "}\nkernel:\n  family: attention\n  language: cuda\n"
                            "  sources: [k.cu]\n  defines: {I: " + std::to_string(i) + "}\n"
                            "simulate: {time_us: 10, stage_ms: 0}\n"},
          {"source_name", "bench.yaml"},
          {"bundle", bundle_to_json(b)},
          {"force", true}};
}

Agent enrol(const std::string& url, const std::string& name, const std::string& gpu = "L4") {
  HttpClient c(url, kEnrol);
  return kfleet::bench::enrol_agent(c, name, "bench", gpu, gpu == "L4" ? "sm_89" : "sm_90a");
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

void submit_many(const std::string& url, int from, int to, int threads, const std::string& gpu) {
  std::atomic<int> next{from};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      HttpClient c(url, kUser);
      for (int i = next++; i < to; i = next++) {
        auto r = c.post_json("/api/v1/jobs", job_body(i, gpu));
        if (!r.ok() || r->status != 201) {
          std::fprintf(stderr, "bench: submit failed: %s\n", r.ok() ? r->body.c_str() : r.error().message.c_str());
          std::exit(1);
        }
      }
    });
  for (auto& t : ts) t.join();
}

int arg(int argc, char** argv, const char* name, int dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return std::atoi(argv[i + 1]);
  return dflt;
}

std::string arg_str(int argc, char** argv, const char* name, const std::string& dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return argv[i + 1];
  return dflt;
}

// Nanoseconds on CLOCK_MONOTONIC, the clock `perf record -k CLOCK_MONOTONIC` stamps its
// samples with: a latency sample's window can be laid over a scheduler trace.
std::int64_t mono_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// One backend's kfleetd at one queue depth, through the phases: start (the kfleetd and its
// backlog), latency samples, event ingestion, scheduling. --db both holds two of them at
// once and interleaves their latency samples (see main).
struct Subject {
  std::string backend;
  std::unique_ptr<kfleet::bench::Kfleetd> k;
  Figures f;
  Agent la;  // the one L4 agent of the latency samples and the ingestion run
  std::unique_ptr<HttpClient> user, agent;  // kept alive across samples, as clients keep them
  std::vector<double> lat, answered, after;
  std::vector<std::pair<std::int64_t, std::int64_t>> windows;  // each sample's start and end
  std::int64_t lat_trips0 = 0;
  int next_job = 0;  // the next latency sample's job number (warm-ups take one too)
  struct Ingestion {
    static constexpr int kBatch = 500;  // events a batch
    std::string path;                   // the run's events endpoint
    std::vector<std::string> bodies;    // one a batch
    int sent = 0;                       // batches sent so far
    double ms = 0;                      // time spent sending them
    std::int64_t trips0 = 0;
    kfleet::bench::CpuMs cpu0;
  } ingestion;
  bool paused = false;

  // SIGSTOP / SIGCONT everything of this backend: the kfleetds and a scratch server's
  // processes. While the other backend of a --db both run is measured this one takes no CPU
  // (no timers, no standby polls, no autovacuum), as if it were not on the machine.
  void pause(bool stop) {
    if (stop == paused || !k) return;
    kfleet::bench::signal_all(*k, stop ? SIGSTOP : SIGCONT);
    paused = stop;
    // Woken, its processes first run what their timers missed: let that pass before measuring.
    if (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~Subject() { pause(false); }
};

std::unique_ptr<Subject> start(const std::string& kfleetd_bin, const std::string& backend,
                               int depth, int n_standbys, bool profile) {
  auto s = std::make_unique<Subject>();
  s->backend = backend;
  Figures& f = s->f;
  f.depth = depth;
  f.load_before = kfleet::bench::load_average();
  s->k = kfleet::bench::start_kfleetd(kfleetd_bin, backend,
                                      {"--lease-ttl-ms", "60000", "--submit-rate-per-min", "0"},
                                      n_standbys, profile);
  const std::string& url = s->k->url;
  std::fprintf(stderr, "kfleet_bench: %d queued: kfleetd at %s, %s %s, %zu standbys\n", depth,
               url.c_str(), backend == "sqlite" ? "SQLite file" : "PostgreSQL", s->k->db.c_str(),
               s->k->standbys.size());

  // 0. The backlog: `depth` jobs for H100, which no agent serves until the scheduling phase.
  auto ts = Clock::now();
  submit_many(url, 0, depth, 4, "H100");
  f.submit_per_s = depth / (ms_since(ts) / 1000.0);
  s->la = enrol(url, "lat");
  s->user = std::make_unique<HttpClient>(url, kUser);
  s->agent = std::make_unique<HttpClient>(url, s->la.token);
  kfleet::bench::reset_pg_profile(*s->k);
  s->lat_trips0 = kfleet::bench::round_trips(*s->k);
  return s;
}

// 1. One submit-to-lease sample beside the backlog: the L4 agent waiting in a long-poll; an L4
//    job is submitted; the time until the agent holds the lease.
//    record false: a warm-up, not counted.
void sample(Subject& s, bool record = true) {
  const int i = s.next_job++;
  Clock::time_point leased{};
  std::thread agent([&] { take_one(*s.agent, s.la, 10000, &leased); });
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let the poll arrive first
  auto t0 = Clock::now();
  auto r = s.user->post_json("/api/v1/jobs", job_body(1000000 + i));
  const auto t1 = Clock::now();
  agent.join();
  if (!r.ok() || r->status != 201) std::exit(1);
  if (!record) return;
  s.lat.push_back(std::chrono::duration<double, std::milli>(leased - t0).count());
  s.answered.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  s.after.push_back(std::chrono::duration<double, std::milli>(leased - t1).count());
  s.windows.emplace_back(mono_ns(t0), mono_ns(leased));
}

void end_latency(Subject& s, const std::string& samples_out) {
  Figures& f = s.f;
  const int depth = f.depth;
  const auto& lat = s.lat;
  if (!samples_out.empty()) {
    // One line per sample: depth, index, start and end (ns, CLOCK_MONOTONIC), milliseconds,
    // and of those the submit's answer. bench/tail_attribution.py lays them over `perf sched
    // timehist`.
    if (FILE* out = std::fopen(samples_out.c_str(), "a")) {
      for (std::size_t i = 0; i < lat.size(); ++i)
        std::fprintf(out, "%d\t%zu\t%lld\t%lld\t%.3f\t%.3f\n", depth, i,
                     static_cast<long long>(s.windows[i].first),
                     static_cast<long long>(s.windows[i].second), lat[i], s.answered[i]);
      std::fclose(out);
    } else {
      std::fprintf(stderr, "kfleet_bench: cannot write --samples-out %s\n", samples_out.c_str());
      std::exit(2);
    }
  }
  const auto n = static_cast<int>(lat.size());
  f.trips_per_sample =
      static_cast<double>(kfleet::bench::round_trips(*s.k) - s.lat_trips0) / std::max(n, 1);
  kfleet::bench::print_pg_profile(*s.k, "submit-to-lease latency at " + std::to_string(depth) +
                                            " queued", n, "sample");
  f.p50 = pct(lat, 0.5);
  f.p99 = pct(lat, 0.99);
  // The lease can come before the submit's answer is read: its part is then negative.
  f.submit_p50 = pct(s.answered, 0.5);
  f.after_submit_p50 = pct(s.after, 0.5);
  // Where the tail sits in the run: at its start (the backlog's wait reasons still being
  // written by the scheduling passes) or spread through it (a checkpoint, the machine).
  std::vector<std::size_t> order(lat.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lat[a] > lat[b]; });
  std::fprintf(stderr, "kfleet_bench: %d queued, %s: slowest submit-to-lease samples (index of %zu: ms):",
               depth, s.backend.c_str(), lat.size());
  for (std::size_t i = 0; i < std::min<std::size_t>(5, order.size()); ++i)
    std::fprintf(stderr, " #%zu: %.2f", order[i], lat[order[i]]);
  std::fprintf(stderr, "\n");
}

// 2. Event ingestion with the backlog in the store: one run, batches of 500 events from 4
//    connections. ingest_start leases the run and builds the bodies, ingest_batches sends the
//    next ones up to a count (--db both alternates backends between calls), ingest_end turns
//    the time spent sending into the figure.
void ingest_start(Subject& s, int n_events) {
  const std::string& url = s.k->url;
  Subject::Ingestion& in = s.ingestion;
  HttpClient user(url, kUser);
  if (auto r = user.post_json("/api/v1/jobs", job_body(2000000)); !r.ok() || r->status != 201) {
    std::fprintf(stderr, "bench: cannot submit the ingestion job\n");
    std::exit(1);
  }
  HttpClient c(url, s.la.token);
  auto r = c.post_json("/api/v1/agents/" + std::to_string(s.la.id) + "/lease?wait_ms=10000",
                       nlohmann::json::object(), std::chrono::milliseconds(20000));
  if (!r.ok() || r->status != 200) {
    std::fprintf(stderr, "bench: no lease for the ingestion run\n");
    std::exit(1);
  }
  auto l = (*r->json())["lease"];
  in.path = "/api/v1/runs/" + std::to_string(l["run_id"].get<std::int64_t>()) + "/events";
  const int batches = n_events / Subject::Ingestion::kBatch;
  in.bodies.clear();  // built before timing: the client's JSON work is not kfleetd's
  for (int b = 0; b < batches; ++b) {
    nlohmann::json evs = nlohmann::json::array();
    for (int i = 0; i < Subject::Ingestion::kBatch; ++i)
      evs.push_back({{"seq", b * Subject::Ingestion::kBatch + i + 1}, {"ts_ms", 0},
                     {"type", "bench.samples"},
                     {"data", {{"i", i}, {"samples_us", {10.1, 10.2, 10.3}}}}});
    in.bodies.push_back(nlohmann::json{{"fencing_token", l["fencing_token"]}, {"events", evs}}.dump());
  }
  kfleet::bench::reset_pg_profile(*s.k);
  in.trips0 = kfleet::bench::round_trips(*s.k);
  in.cpu0 = kfleet::bench::cpu_ms(*s.k);
}

void ingest_batches(Subject& s, int upto) {
  Subject::Ingestion& in = s.ingestion;
  upto = std::min(upto, static_cast<int>(in.bodies.size()));
  if (in.sent >= upto) return;
  std::atomic<int> next{in.sent};
  auto ti = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      HttpClient hc(s.k->url, s.la.token);
      for (int b = next++; b < upto; b = next++) {
        auto rr = hc.request("POST", in.path, in.bodies[b], "application/json");
        if (!rr.ok() || rr->status != 200) std::fprintf(stderr, "bench: ingest failed\n");
      }
    });
  for (auto& t : threads) t.join();
  in.ms += ms_since(ti);
  std::fprintf(stderr,
               "kfleet_bench: %d queued, %s: event batches %d to %d ran from %.6f to %.6f s "
               "(CLOCK_MONOTONIC)\n",
               s.f.depth, s.backend.c_str(), in.sent, upto - 1, mono_ns(ti) / 1e9,
               mono_ns(Clock::now()) / 1e9);
  in.sent = upto;
}

void ingest_end(Subject& s) {
  Figures& f = s.f;
  Subject::Ingestion& in = s.ingestion;
  const int batches = in.sent;
  f.events_per_s = (batches * Subject::Ingestion::kBatch) / (in.ms / 1000.0);
  const auto cpu1 = kfleet::bench::cpu_ms(*s.k);
  f.kfleetd_cpu_per_batch = (cpu1.kfleetd - in.cpu0.kfleetd) / std::max(batches, 1);
  f.db_cpu_per_batch = (cpu1.db_server - in.cpu0.db_server) / std::max(batches, 1);
  f.trips_per_batch =
      static_cast<double>(kfleet::bench::round_trips(*s.k) - in.trips0) / std::max(batches, 1);
  kfleet::bench::print_pg_profile(*s.k, "event ingestion at " + std::to_string(f.depth) + " queued",
                                  batches, "batch of 500 events");
}

// 3. Scheduling throughput: n_agents H100 agents enrol and drain the backlog through HTTP, each
// a coroutine of the bench's swarm (swarm.hpp: one connection per agent, all on one thread, so
// that 10,000 agents are 10,000 connections and not 10,000 threads), which long-polls and
// finishes each lease at once.
void schedule(Subject& s, int n_agents) {
  Figures& f = s.f;
  const int depth = f.depth;
  const std::string& url = s.k->url;
  auto& k = s.k;
  std::vector<Agent> agents(static_cast<std::size_t>(n_agents));
  {
    std::atomic<int> next{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([&] {
        for (int i = next++; i < n_agents; i = next++) {
          agents[static_cast<std::size_t>(i)] = enrol(url, "a" + std::to_string(i), "H100");
        }
      });
    for (auto& t : ts) t.join();
  }
  kfleet::bench::SwarmOptions so;
  so.urls = {url};
  so.drain = true;
  so.poll_wait_ms = 1000;
  so.drain_target = depth;
  kfleet::bench::Swarm swarm(std::move(agents), so);
  kfleet::bench::reset_pg_profile(*k);
  const auto trips0 = kfleet::bench::round_trips(*k);
  const auto cpu0 = kfleet::bench::cpu_ms(*k);
  auto t0 = Clock::now();
  swarm.start();
  // A job also ends in error when its lease never reached an agent on each of its attempts (the
  // answer cut off or timed out under the load): counted from the API once a second, page by
  // page (1,000 a page, newest first), so that a drain ends when every job has ended, not only
  // when every job has passed.
  HttpClient user(url, kUser);
  std::int64_t errored = 0;
  auto last_count = Clock::now();
  auto count_errored = [&] {
    std::int64_t n = 0, before = 0;
    for (;;) {
      auto r = user.get("/api/v1/jobs?state=error&limit=1000" +
                        (before ? "&before=" + std::to_string(before) : std::string()));
      if (!r.ok() || r->status != 200) return;
      auto j = r->json();
      if (!j || !j->contains("jobs")) return;
      const auto& page = (*j)["jobs"];
      n += static_cast<std::int64_t>(page.size());
      if (page.size() < 1000) break;
      before = page.back().value("id", std::int64_t{0});
      if (before <= 0) return;  // a page without ids: count nothing rather than loop
    }
    errored = n;
  };
  while (swarm.stats().finishes.load() + swarm.stats().finishes_unheard.load() + errored < depth) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (ms_since(last_count) > 1000) {
      count_errored();
      last_count = Clock::now();
    }
    if (ms_since(t0) > 900'000) {
      std::fprintf(stderr, "bench: the drain stalled: %lld of %d jobs finished in 15 min\n",
                   static_cast<long long>(swarm.stats().finishes.load()), depth);
      std::exit(1);
    }
  }
  f.jobs_per_s = depth / (ms_since(t0) / 1000.0);
  const auto cpu1 = kfleet::bench::cpu_ms(*k);
  swarm.stop();
  const auto& st = swarm.stats();
  std::fprintf(stderr,
               "kfleet_bench: %d queued, %s: %d agents drained them at %.0f jobs/s (poll errors "
               "%lld, finish errors %lld, finishes landed unheard %lld, leases lost %lld, jobs ended in "
               "error %lld; connections %lld, failed to connect %lld)\n",
               depth, s.backend.c_str(), n_agents, f.jobs_per_s,
               static_cast<long long>(st.poll_errors.load()),
               static_cast<long long>(st.finish_errors.load()),
               static_cast<long long>(st.finishes_unheard.load()),
               static_cast<long long>(st.lost_leases.load()), static_cast<long long>(errored),
               static_cast<long long>(st.connects.load()),
               static_cast<long long>(st.connect_errors.load()));
  for (const auto& [kind, n] : st.poll_error_kinds)
    std::fprintf(stderr, "kfleet_bench: %d queued, %s: poll errors: %lld x %s\n", depth,
                 s.backend.c_str(), static_cast<long long>(n), kind.c_str());
  f.kfleetd_cpu_per_job = (cpu1.kfleetd - cpu0.kfleetd) / depth;
  f.db_cpu_per_job = (cpu1.db_server - cpu0.db_server) / depth;
  // The drain's window on CLOCK_MONOTONIC, for a trace taken beside the bench
  // (perf sched timehist --time START,END): which process used the CPUs while it drained.
  std::fprintf(stderr,
               "kfleet_bench: %d queued, %s: scheduling ran from %.6f to %.6f s (CLOCK_MONOTONIC)\n",
               depth, s.backend.c_str(), mono_ns(t0) / 1e9, mono_ns(Clock::now()) / 1e9);
  f.trips_per_job = static_cast<double>(kfleet::bench::round_trips(*k) - trips0) / depth;
  f.load_after = kfleet::bench::load_average();
  kfleet::bench::print_pg_profile(*k, "scheduling at " + std::to_string(depth) + " queued", depth,
                                  "job");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--pg-setting")) {
      const std::string kv = argv[++i];
      if (kv.find('=') == std::string::npos || kv.front() == '=') {
        std::fprintf(stderr, "bench: --pg-setting takes NAME=VALUE (as postgres -c), not '%s'\n",
                     kv.c_str());
        return 2;
      }
      kfleet::bench::scratch_pg_settings().push_back(kv);
    }
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--soak"))
      return kfleet::bench::run_soak(argc, argv, arg_str(argc, argv, "--kfleetd", KFLEETD_BIN));
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::puts(
          "kfleet_bench [--agents N] [--jobs N] [--depths N,N,...] [--latency-samples N]\n"
          "             [--events N] [--standbys N] [--kfleetd PATH]\n"
          "kfleet_bench --soak [--soak-s 600] [--live 500] [--retired 10000] [--db ...]\n"
          "Measures kfleetd through HTTP at each queue depth (default: 10000 and --jobs),\n"
          "each on a fresh kfleetd and temporary SQLite file: N jobs are queued for a GPU class\n"
          "no agent serves yet; beside that backlog it measures submit-to-lease latency (one\n"
          "waiting agent, --latency-samples jobs) and event ingestion (--events, batches of 500\n"
          "from 4 clients); then --agents agents for the backlog's class enrol and drain it\n"
          "(scheduling throughput). Prints one table, a column per depth.\n"
          "--kfleetd PATH runs another kfleetd binary (to compare builds on one machine).\n"
          "--samples-out FILE appends each submit-to-lease sample (depth, index, start and end\n"
          "in ns on CLOCK_MONOTONIC, ms, and the ms until the submit's answer) to FILE, to lay\n"
          "over a scheduler trace (bench/tail_attribution.py); with --db both, to FILE.sqlite\n"
          "and FILE.postgres.\n"
          "--db sqlite (default): a temporary SQLite file; --db postgres: a scratch PostgreSQL\n"
          "server (initdb in a temp dir); --db postgresql://...: an existing (empty) database;\n"
          "--db both: SQLite and a scratch PostgreSQL at each depth together, their latency\n"
          "samples in alternating blocks of 50 (A B B A ...) with the other backend paused\n"
          "(SIGSTOP) and one uncounted warm-up sample at each block's start, the event batches\n"
          "in alternating tenths alike, scheduling one after the other; then each table and\n"
          "one of "
          "PostgreSQL / SQLite ratios against the targets (p99 <= 1.5x, throughputs >= 0.8x).\n"
          "--standbys N (default 2): on PostgreSQL, N standby kfleetd on the same database\n"
          "beside the leader, as a production HA setup runs (SQLite has none).\n"
          "Each depth prints the machine's load averages (/proc/loadavg) around it.\n"
          "--pg-profile: the scratch PostgreSQL server loads pg_stat_statements, and each depth\n"
          "prints statements per event batch and per scheduled job, and the costliest ones.\n"
          "--pg-setting NAME=VALUE (repeatable): a scratch PostgreSQL server starts with it\n"
          "(postgres -c), e.g. shared_buffers=512MB; printed with the results.\n"
          "--soak: what a fleet's history costs a user instead (see --soak --help).");
      return 0;
    }
  const int n_agents = arg(argc, argv, "--agents", 100);
  const int n_jobs = arg(argc, argv, "--jobs", 10000);
  const int n_lat = arg(argc, argv, "--latency-samples", 300);
  const int n_events = arg(argc, argv, "--events", 200000);
  const std::string bin = arg_str(argc, argv, "--kfleetd", KFLEETD_BIN);
  const std::string backend = arg_str(argc, argv, "--db", "sqlite");
  const int n_standbys = arg(argc, argv, "--standbys", 2);
  const std::string samples_out = arg_str(argc, argv, "--samples-out", "");
  bool profile = false;
  for (int i = 1; i < argc; ++i) profile = profile || !std::strcmp(argv[i], "--pg-profile");
  std::vector<int> depths;
  {
    std::string d = arg_str(argc, argv, "--depths", "");
    if (d.empty()) d = std::to_string(std::min(n_jobs, 10000)) + "," + std::to_string(n_jobs);
    for (std::size_t p = 0; p < d.size();) {
      std::size_t q = d.find(',', p);
      if (q == std::string::npos) q = d.size();
      const int v = std::atoi(d.substr(p, q - p).c_str());
      if (v <= 0) {
        std::fprintf(stderr, "kfleet_bench: --depths wants positive counts, e.g. 10000,50000\n");
        return 2;
      }
      if (std::find(depths.begin(), depths.end(), v) == depths.end()) depths.push_back(v);
      p = q + 1;
    }
  }
  if (n_agents < 1 || n_lat < 1 || n_events < 500) {
    std::fprintf(stderr, "kfleet_bench: --agents and --latency-samples must be >= 1, --events >= 500\n");
    return 2;
  }
  const bool both = backend == "both";
  const std::vector<std::string> backends =
      both ? std::vector<std::string>{"sqlite", "postgres"} : std::vector<std::string>{backend};
  std::map<std::string, std::vector<Figures>> figs;
  for (std::size_t di = 0; di < depths.size(); ++di) {
    const int d = depths[di];
    std::vector<std::unique_ptr<Subject>> subjects;
    for (const auto& b : backends) {
      for (auto& s : subjects) s->pause(true);  // asleep while the next one's backlog is queued
      subjects.push_back(start(bin, b, d, n_standbys, profile));
    }
    auto alone = [&](Subject& s) {  // only s awake
      for (auto& o : subjects)
        if (o.get() != &s) o->pause(true);
      s.pause(false);
    };
    // Latency: with two backends, blocks of kBlock samples each in turn, A B B A A B ..., the
    // other paused: a slow patch of the machine (seconds to minutes on a shared VM) falls on
    // both alike, as the measurement method's A B A B rounds do for kernels. Each block starts
    // with one warm-up sample that is not counted.
    constexpr int kBlock = 50;
    for (int done = 0, round = 0; done < n_lat; ++round) {
      const int n = std::min(kBlock, n_lat - done);
      for (std::size_t x = 0; x < subjects.size(); ++x) {
        Subject& s = *subjects[round % 2 == 0 ? x : subjects.size() - 1 - x];
        alone(s);
        // Woken, the first sample finds its caches cold: a warm-up, not counted.
        if (subjects.size() > 1) sample(s, false);
        for (int i = 0; i < n; ++i) sample(s);
      }
      done += n;
    }
    for (auto& s : subjects) {
      alone(*s);
      // --db both: FILE.sqlite and FILE.postgres.
      end_latency(*s, samples_out.empty() || !both ? samples_out : samples_out + "." + s->backend);
    }
    // Ingestion: with two backends, a tenth of the batches each in turn, A B B A, as the
    // latency samples; the figure is the events over the time spent sending them. Scheduling
    // (a drain of the backlog), one backend after the other, the first in turns by depth.
    if (di % 2 == 1) std::reverse(subjects.begin(), subjects.end());
    for (auto& s : subjects) {
      alone(*s);
      ingest_start(*s, n_events);
    }
    const int batches = n_events / Subject::Ingestion::kBatch;
    const int chunk = subjects.size() > 1 ? std::max(1, batches / 10) : batches;
    for (int upto = chunk, round = 0; upto - chunk < batches; upto += chunk, ++round)
      for (std::size_t x = 0; x < subjects.size(); ++x) {
        Subject& s = *subjects[round % 2 == 0 ? x : subjects.size() - 1 - x];
        alone(s);
        ingest_batches(s, upto);
      }
    for (auto& s : subjects) {
      alone(*s);
      ingest_end(*s);
    }
    for (auto& s : subjects) {
      alone(*s);
      schedule(*s, n_agents);
    }
    for (auto& s : subjects) figs[s->backend].push_back(s->f);
  }

  for (const auto& b : backends) {
    if (both) std::printf("== kfleet_bench --db %s\n", b.c_str());
    kfleet::bench::print_table(figs[b], n_agents, n_lat, n_events, bin, b, n_standbys);
  }
  if (both) kfleet::bench::print_ratios(figs["sqlite"], figs["postgres"]);
  return 0;
}
