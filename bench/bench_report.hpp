#pragma once
// kfleet_bench's figures and its tables: one backend's, a column per queue depth, and for
// --db both the PostgreSQL / SQLite ratios against the targets.
#include <string>
#include <vector>

namespace kfleet::bench {

// What one depth measured.
struct Figures {
  int depth = 0;
  double p50 = 0, p99 = 0, submit_per_s = 0, jobs_per_s = 0, events_per_s = 0;
  // Database round trips (0 on SQLite) per event batch, scheduled job and latency sample.
  double trips_per_batch = 0, trips_per_job = 0, trips_per_sample = 0;
  // A latency sample in its two parts: the submit's answer, then the lease after it.
  double submit_p50 = 0, after_submit_p50 = 0;
  // CPU ms the leader kfleetd and the database server used per batch and per scheduled job.
  double kfleetd_cpu_per_batch = 0, db_cpu_per_batch = 0, kfleetd_cpu_per_job = 0,
         db_cpu_per_job = 0;
  std::string load_before, load_after;  // the machine's load averages around the measurement
};

// One backend's table; the targets hold at the deepest queue measured.
void print_table(const std::vector<Figures>& figs, int n_agents, int n_lat, int n_events,
                 const std::string& bin, const std::string& backend, int n_standbys);

// --db both: PostgreSQL's figures over SQLite's, depth by depth, against the targets for
// PostgreSQL beside SQLite (p99 at most 1.5x, throughputs at least 0.8x).
void print_ratios(const std::vector<Figures>& lite, const std::vector<Figures>& pg);

}  // namespace kfleet::bench
