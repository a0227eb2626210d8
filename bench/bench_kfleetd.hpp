#pragma once
// A kfleetd under test for the benches: a fresh database (a SQLite file, or a scratch
// PostgreSQL server), the leader on loopback port 0, and on PostgreSQL any number of standby
// kfleetd on the same database (they poll for the leader lock and serve reads, as in
// production). Everything is removed when it goes out of scope.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kfleet/common/http_client.hpp"
#include "kfleet/common/result.hpp"
#include "support.hpp"

namespace kfleet::bench {

inline constexpr const char* kUser = "kft_bench-admin-token-0d9e4f1a";  // the first admin
inline constexpr const char* kEnrol = "kfe_bench-enrol-token";

using Clock = std::chrono::steady_clock;
// Milliseconds since t.
inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// A simulated agent the bench drives over HTTP, as kfleetd enrolled it.
struct Agent {
  std::int64_t id = 0;
  std::string token;
};
// Enrols one through `c` (which holds the enrolment token): one simulated GPU of this class and
// arch, in `region`. Exits the bench, saying why, when kfleetd refuses.
Agent enrol_agent(HttpClient& c, const std::string& name, const std::string& region,
                  const std::string& gpu, const std::string& arch);

struct Kfleetd {
  std::string dir;   // temporary; removed at the end
  std::string db;    // what --db was given
  std::string url;   // the leader's http://127.0.0.1:port
  std::shared_ptr<void> pg_server;
  int db_server_pid = 0;  // a scratch PostgreSQL server's postmaster; 0 for SQLite or a --db URL
  e2e::Proc leader;
  std::vector<e2e::Proc> standbys;
  std::vector<std::string> standby_urls;  // each standby's http://127.0.0.1:port
  // On a scratch PostgreSQL started with profile = true: runs one statement on the bench's
  // database and returns its rows (pg_stat_statements for the bench notes); else an error.
  std::function<Result<std::string>(const std::string& sql)> pg_query;
  ~Kfleetd();
};

// The settings (NAME=VALUE, as postgres -c takes them) a scratch PostgreSQL server of this
// bench starts with: kfleet_bench's --pg-setting, repeatable.
std::vector<std::string>& scratch_pg_settings();

// Starts the leader (and `standbys` more kfleetd when the backend is PostgreSQL; SQLite has
// none) with `extra` arguments; exits the bench with kfleetd's log when one does not start.
// profile: a scratch PostgreSQL server (--db postgres) loads pg_stat_statements.
std::unique_ptr<Kfleetd> start_kfleetd(const std::string& bin, const std::string& backend,
                                       const std::vector<std::string>& extra, int standbys,
                                       bool profile = false);

// What a phase cost PostgreSQL, from pg_stat_statements (reset before the phase): statements
// executed (each one round trip, or part of one for a multi-statement BEGIN) per unit of work,
// and the statements that took the most server time. Prints nothing without a profile.
void print_pg_profile(Kfleetd& k, const std::string& phase, double units, const char* unit);
void reset_pg_profile(Kfleetd& k);

// The leader store's round trips to its database so far (/metrics'
// kfleet_store_round_trips_total; 0 on SQLite). Reading it costs a few of its own.
std::int64_t round_trips(Kfleetd& k);

// CPU time used so far (user + system, ms, from /proc) by the leader kfleetd, and by the
// scratch database server: its postmaster, every process it started (a connection's backend,
// the WAL writer, autovacuum; the standbys' connections too) and those it has reaped. 0 for the
// server on SQLite (its work is kfleetd's) or for a --db URL's (not on this machine to read).
// A phase's cost is the difference across it: the work behind a figure, which a synchronous
// call makes wait and a loaded machine makes slow, stays the same.
struct CpuMs {
  double kfleetd = 0, db_server = 0;
};
CpuMs cpu_ms(const Kfleetd& k);

// Sends sig to every process of this kfleetd setup: the leader, the standbys, and a scratch
// server's postmaster and the processes it started. SIGSTOP stops the kfleetds before the
// server, SIGCONT wakes the server first. kfleet_bench --db both pauses one backend while it
// measures the other.
void signal_all(const Kfleetd& k, int sig);

// The machine's load averages (/proc/loadavg's first three fields), quoted beside each figure:
// the benches run on shared machines.
std::string load_average();

}  // namespace kfleet::bench
