#pragma once
// kfleet-agent's life: enrol (retrying while kfleetd is unreachable), recover leftover spools,
// heartbeat, then long-poll for leases and run each through the pipeline, one at a time.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "kfleet/agent/backend.hpp"
#include "kfleet/agent/backoff.hpp"
#include "kfleet/agent/pipeline.hpp"
#include "kfleet/agent/spool.hpp"
#include "kfleet/agent/transport.hpp"
#include "kfleet/common/clock.hpp"

namespace kfleet::agent {

struct AgentConfig {
  std::string name;
  std::string region = "local";
  std::string provider = "static";
  std::string instance_id;
  std::string work_dir = "./kfleet-agent-work";
  int max_jobs = 0;          // 0 = forever
  int heartbeat_ms = 0;      // 0 = what kfleetd says
  int lease_wait_ms = 20000;
  // One agent serves one GPU: the discovered GPU with this index is its slot on `host_id`.
  // An empty host_id makes the agent a host of its own (one GPU, as before slots).
  unsigned gpu = 0;
  std::string host_id;
  // How failures of the fleet's (kfleetd unreachable, a full disk, a missing compiler) are
  // retried before a run is given back to kfleetd.
  FleetRetry fleet_retry = {};
};

class Agent {
 public:
  Agent(AgentConfig cfg, TransportPtr transport, BackendPtr backend, ClockPtr clock);
  // Runs until max_jobs are done or shutdown is requested; returns the process exit code.
  int run();
  // Thread-safe: stops the current run (its events are flushed) and ends run().
  void request_shutdown();
  bool busy() const { return busy_.load(); }

 private:
  Result<Enrolment> enrol_with_retry();
  void recover_spools();
  Result<RunSpool> create_spool_with_retry(const Lease& lease, const StopFlag& stop);
  void run_one(const Lease& lease, class Heartbeater& hb);
  void stop_current(const std::string& why);

  AgentConfig cfg_;
  TransportPtr transport_;
  BackendPtr backend_;
  ClockPtr clock_;
  GpuInfo gpu_;
  Enrolment enrolment_;
  std::atomic<bool> shutdown_{false};
  std::atomic<bool> busy_{false};
  std::mutex run_mu_;
  StopFlag* current_stop_ = nullptr;
  std::string stop_reason_;
  Interrupt quit_;  // wakes retry sleeps on shutdown
};

}  // namespace kfleet::agent
