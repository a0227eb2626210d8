#pragma once
// The agent's heartbeat: tells kfleetd it is alive and renews the lease of the run it holds.
// kfleetd answers cancel / lease_valid; and when no heartbeat has got through for longer than
// the lease TTL, kfleetd has requeued the job, so the agent stops the run by itself.
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "kfleet/agent/backoff.hpp"
#include "kfleet/agent/transport.hpp"
#include "kfleet/common/clock.hpp"

namespace kfleet::agent {

// Pure cut-off logic on an injected clock.
class LeaseWatch {
 public:
  LeaseWatch(ClockPtr clock, int lease_ttl_ms) : clock_(std::move(clock)), ttl_ms_(lease_ttl_ms) {}
  // Getting a lease or a successful heartbeat both prove kfleetd heard from us.
  void contact() { last_ok_ = clock_->now_ms(); }
  TimeMs silent_ms() const { return clock_->now_ms() - last_ok_; }
  bool cut_off() const { return silent_ms() > ttl_ms_; }
  int ttl_ms() const { return ttl_ms_; }

 private:
  ClockPtr clock_;
  int ttl_ms_;
  TimeMs last_ok_ = clock_->now_ms();
};

class Heartbeater {
 public:
  using StopRun = std::function<void(const std::string& why)>;

  Heartbeater(Transport& t, std::int64_t agent_id, int heartbeat_ms, int lease_ttl_ms,
              ClockPtr clock);
  ~Heartbeater();

  // The run whose lease the heartbeats renew; stop_run is called at most once per run.
  void set_run(std::int64_t run_id, std::int64_t fencing_token, StopRun stop_run);
  void clear_run();

  void start();
  void stop();
  // One heartbeat and what follows from its answer (the thread's step; tests call it).
  void beat_once();

 private:
  void loop();
  void stop_current(std::unique_lock<std::mutex>& l, const std::string& why);

  Transport& transport_;
  std::int64_t agent_id_;
  int heartbeat_ms_;
  ClockPtr clock_;
  std::mutex mu_;
  LeaseWatch watch_;
  std::int64_t run_id_ = 0, token_ = 0;
  StopRun stop_run_;
  int failures_ = 0;
  Interrupt quit_;
  Backoff jitter_;
  std::thread thread_;
};

}  // namespace kfleet::agent
