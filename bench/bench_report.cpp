#include "bench_report.hpp"

#include <cstdio>

#include "bench_kfleetd.hpp"

namespace kfleet::bench {
namespace {

std::string thousands(double v) {
  std::string s = std::to_string(static_cast<long long>(v + 0.5));
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

}  // namespace

void print_table(const std::vector<Figures>& figs, int n_agents, int n_lat, int n_events,
                 const std::string& bin, const std::string& backend, int n_standbys) {
  const Figures& last = figs.back();
  auto row = [&](const char* name, double Figures::*m, const char* fmt, const char* target,
                 const char* verdict) {
    std::printf("| %s |", name);
    for (const auto& f : figs) {
      char buf[64];
      if (fmt[0] == 'k') std::snprintf(buf, sizeof buf, "%s", thousands(f.*m).c_str());
      else std::snprintf(buf, sizeof buf, fmt, f.*m);
      std::printf(" %s |", buf);
    }
    std::printf(" %s | %s |\n", target, verdict);
  };
  std::printf("\n| metric (%d agents) |", n_agents);
  for (const auto& f : figs) std::printf(" %s queued |", thousands(f.depth).c_str());
  std::printf(" target | at %s |\n|---|", thousands(last.depth).c_str());
  for (std::size_t i = 0; i < figs.size(); ++i) std::printf("---:|");
  std::printf("---:|---|\n");
  row("submit-to-lease latency p50 (ms)", &Figures::p50, "%.2f", "", "");
  row("submit-to-lease latency p99 (ms)", &Figures::p99, "%.2f", "<= 5",
      last.p99 <= 5 ? "ok" : "MISSED");
  row("p50 of the sample's first part: the submit answered (ms)", &Figures::submit_p50, "%.2f",
      "", "");
  row("p50 of its second part: the lease after the answer (ms)", &Figures::after_submit_p50,
      "%.2f", "", "");
  row("scheduling throughput (jobs/s)", &Figures::jobs_per_s, "k", ">= 1,000",
      last.jobs_per_s >= 1000 ? "ok" : "MISSED");
  row("event ingestion (events/s, batches of 500, 4 clients)", &Figures::events_per_s, "k",
      ">= 150,000", last.events_per_s >= 150000 ? "ok" : "MISSED");
  row("job submission (jobs/s, 4 clients, YAML parsed server-side)", &Figures::submit_per_s, "k",
      "", "");
  row("database round trips per scheduled job (0: in process)", &Figures::trips_per_job, "%.1f",
      "", "");
  row("database round trips per event batch (0: in process)", &Figures::trips_per_batch, "%.1f",
      "", "");
  row("database round trips per latency sample (0: in process)", &Figures::trips_per_sample,
      "%.1f", "", "");
  row("kfleetd CPU per scheduled job (ms)", &Figures::kfleetd_cpu_per_job, "%.3f", "", "");
  row("database server CPU per scheduled job (ms, 0: in process)", &Figures::db_cpu_per_job,
      "%.3f", "", "");
  row("kfleetd CPU per event batch (ms)", &Figures::kfleetd_cpu_per_batch, "%.3f", "", "");
  row("database server CPU per event batch (ms, 0: in process)", &Figures::db_cpu_per_batch,
      "%.3f", "", "");
  std::printf("\n(%d latency samples, %d events per depth; kfleetd %s on %s, %d standbys on "
              "PostgreSQL; CPU from /proc: the leader kfleetd, and a scratch PostgreSQL server's "
              "processes, a --db URL's server not measured)\n",
              n_lat, n_events / 500 * 500, bin.c_str(), backend.c_str(), n_standbys);
  if (!kfleet::bench::scratch_pg_settings().empty() && backend != "sqlite") {
    std::printf("scratch PostgreSQL server started with:");
    for (const auto& kv : kfleet::bench::scratch_pg_settings()) std::printf(" -c %s", kv.c_str());
    std::printf("\n");
  }
  for (const auto& f : figs)
    std::printf("load averages (1, 5, 15 min) at %s queued: %s before, %s after\n",
                thousands(f.depth).c_str(), f.load_before.c_str(), f.load_after.c_str());
}

void print_ratios(const std::vector<Figures>& lite, const std::vector<Figures>& pg) {
  std::printf("\n== PostgreSQL vs SQLite (one run on one machine; PostgreSQL is a local scratch "
              "server on a unix socket; the latency samples of the two alternate in blocks of "
              "50, A B B A, the other backend paused, each block after one warm-up sample; the "
              "event batches alike in tenths)\n\n");
  std::printf("| metric | SQLite | PostgreSQL | PostgreSQL / SQLite | target |\n"
              "|---|---:|---:|---:|---|\n");
  int missed = 0;
  for (std::size_t i = 0; i < lite.size() && i < pg.size(); ++i) {
    const std::string at = " at " + thousands(lite[i].depth) + " queued";
    auto row = [&](const char* name, double Figures::*m, const char* unit, bool lower_better,
                   double target) {
      const double a = lite[i].*m, b = pg[i].*m, ratio = a > 0 ? b / a : 0;
      std::string verdict;
      if (target > 0) {
        const bool ok = lower_better ? ratio <= target : ratio >= target;
        missed += ok ? 0 : 1;
        char t[64];
        std::snprintf(t, sizeof t, "%s %.1fx: %s", lower_better ? "<=" : ">=", target,
                      ok ? "ok" : "MISSED");
        verdict = t;
      }
      std::printf("| %s%s | %.2f %s | %.2f %s | %.2fx (%s is better) | %s |\n", name, at.c_str(),
                  a, unit, b, unit, ratio, lower_better ? "lower" : "higher", verdict.c_str());
    };
    row("submit-to-lease latency p50 (ms)", &Figures::p50, "ms", true, 0);
    row("submit-to-lease latency p99 (ms)", &Figures::p99, "ms", true, 1.5);
    row("scheduling throughput (jobs/s)", &Figures::jobs_per_s, "jobs/s", false, 0.8);
    row("event ingestion (events/s, batches of 500, 4 clients)", &Figures::events_per_s,
        "events/s", false, 0.8);
    row("job submission (jobs/s, 4 clients, YAML parsed server-side)", &Figures::submit_per_s,
        "jobs/s", false, 0);
  }
  std::printf("\n%s\n", missed ? (std::to_string(missed) + " of the ratio targets MISSED").c_str()
                               : "every ratio target met");
}

}  // namespace kfleet::bench
