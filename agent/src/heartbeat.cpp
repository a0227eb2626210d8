#include "kfleet/agent/heartbeat.hpp"

#include "kfleet/common/log.hpp"

namespace kfleet::agent {

Heartbeater::Heartbeater(Transport& t, std::int64_t agent_id, int heartbeat_ms, int lease_ttl_ms,
                         ClockPtr clock)
    : transport_(t), agent_id_(agent_id), heartbeat_ms_(heartbeat_ms), clock_(clock),
      watch_(clock, lease_ttl_ms) {}

Heartbeater::~Heartbeater() { stop(); }

void Heartbeater::set_run(std::int64_t run_id, std::int64_t fencing_token, StopRun stop_run) {
  std::lock_guard<std::mutex> l(mu_);
  run_id_ = run_id;
  token_ = fencing_token;
  stop_run_ = std::move(stop_run);
  watch_.contact();  // the lease was just granted
}

void Heartbeater::clear_run() {
  std::lock_guard<std::mutex> l(mu_);
  run_id_ = 0;
  token_ = 0;
  stop_run_ = nullptr;
}

void Heartbeater::start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
}

void Heartbeater::stop() {
  quit_.trigger();
  if (thread_.joinable()) thread_.join();
}

void Heartbeater::stop_current(std::unique_lock<std::mutex>& l, const std::string& why) {
  auto fn = std::move(stop_run_);
  stop_run_ = nullptr;
  l.unlock();
  if (fn) fn(why);
  l.lock();
}

void Heartbeater::beat_once() {
  std::unique_lock<std::mutex> l(mu_);
  std::int64_t run = run_id_, token = token_;
  l.unlock();
  auto r = transport_.heartbeat(agent_id_, run, token);
  l.lock();
  if (run != run_id_) return;  // the run changed while we were asking: the answer is stale
  if (r) {
    if (failures_ > 0) log::info("agent", "heartbeat reaches kfleetd again");
    failures_ = 0;
    watch_.contact();
    if (run > 0 && stop_run_) {
      if (r->cancel) {
        log::info("agent", "run ", run, ": cancelled by kfleetd; stopping it");
        stop_current(l, "cancelled");
      } else if (!r->lease_valid) {
        log::warn("agent", "run ", run, ": kfleetd says our lease is no longer valid; stopping it");
        stop_current(l, "lease lost");
      }
    }
    return;
  }
  ++failures_;
  log::warn("agent", "heartbeat failed (", failures_, " in a row, silent for ",
            watch_.silent_ms() / 1000.0, " s): ", r.error().message);
  if (run > 0 && stop_run_ && watch_.cut_off()) {
    std::string why = "cut off from kfleetd for " + std::to_string(watch_.silent_ms() / 1000) +
                      "s > lease TTL (" + std::to_string(watch_.ttl_ms() / 1000) +
                      "s): stopping the run";
    log::warn("agent", "run ", run, ": ", why, " (kfleetd will have requeued it)");
    stop_current(l, why);
  }
}

void Heartbeater::loop() {
  while (quit_.sleep_for(jitter_.jitter(std::chrono::milliseconds(heartbeat_ms_)))) beat_once();
}

}  // namespace kfleet::agent
