#pragma once
// Simulated agents by the thousand for kfleet_bench: each agent is a coroutine holding one
// keep-alive HTTP/1.1 connection to kfleetd, all of them on one thread of the bench (Boost.Beast),
// so that 10,000 of them cost the bench's machine little beside the kfleetd it measures.
// Each does over its connection what kfleet-agent does over its own two (heartbeats, long
// polls, runs): heartbeat, long-poll, and on a lease hold the run for `run_ms` with heartbeats
// renewing it, upload its events and finish it. The drain mode only long-polls and finishes
// each lease at once (kfleet_bench's scheduling throughput). Given several URLs (a PostgreSQL
// leader and its standbys), an agent whose connection fails or that meets a standby goes to the
// next, as kfleet-agent does.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_kfleetd.hpp"

namespace kfleet::bench {

using SwarmAgent = Agent;  // id and token, as kfleetd enrolled it

struct SwarmOptions {
  std::vector<std::string> urls;  // http://host:port, the leader first
  bool drain = false;             // long polls only, each lease finished at once
  int heartbeat_ms = 5000;        // a run's heartbeats; idle, heartbeat then one long poll
  int poll_wait_ms = 5000;        // the long poll's wait
  int run_ms = 10000;             // a run is held this long, heartbeating, before its finish
  int events_per_run = 20;        // uploaded in one batch before the finish
  std::int64_t drain_target = 0;  // drain: stop once this many leases were finished
  int cpu = -1;                   // >= 0: the swarm's thread runs on this CPU alone
};

// What the agents saw. Written by the swarm's thread; read once it has stopped (or, for the
// atomics, at any time).
struct SwarmStats {
  std::vector<float> heartbeat_ms;        // answered heartbeats' latency, idle and running
  std::atomic<std::int64_t> heartbeats{0}, heartbeat_errors{0};
  std::atomic<std::int64_t> polls{0}, poll_errors{0};
  // The poll errors by what came back ("no answer": the connection failed or timed out; else
  // "HTTP <status>: <the first such answer's body>"): written by the swarm's thread, read after
  // stop().
  std::map<std::string, std::int64_t> poll_error_kinds;
  std::atomic<std::int64_t> leases{0}, finishes{0}, finish_errors{0}, upload_errors{0};
  std::atomic<std::int64_t> lost_leases{0};  // a heartbeat said lease_valid false, or a finish 409
  // A finish whose answer was cut off (a timeout, a dropped connection) and whose retry was
  // refused (409): the first one had landed. The run is done; the swarm never heard it say so.
  std::atomic<std::int64_t> finishes_unheard{0};
  std::atomic<std::int64_t> connects{0}, connect_errors{0};
  std::atomic<std::int64_t> connected{0};    // connections open now
  // Failover: per agent, the time (ms since kill_at_ns, CLOCK_MONOTONIC) of its first
  // answered heartbeat after kill_at_ns was set; -1 until then.
  std::atomic<std::int64_t> kill_at_ns{0};
  // Heartbeats and polls that failed after kill_at_ns (the failover's, not the soak's); the
  // counts and latencies above are from before it.
  std::atomic<std::int64_t> takeover_errors{0};
  std::vector<std::int64_t> back_after_ms;
};

class Swarm {
 public:
  Swarm(std::vector<SwarmAgent> agents, SwarmOptions o);
  ~Swarm();
  void start();  // on a thread of its own
  void stop();   // each agent stops after its current request; joins
  SwarmStats& stats() { return *stats_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<SwarmStats> stats_;
  std::thread thread_;
};

}  // namespace kfleet::bench
