#include "kfleet/agent/run_events.hpp"

#include "kfleet/common/log.hpp"

namespace kfleet::agent {

RunEventLog::RunEventLog(Transport& t, RunSpool spool, ClockPtr clock,
                         std::function<void()> on_stale)
    : transport_(t), clock_(std::move(clock)), on_stale_(std::move(on_stale)),
      spool_(std::move(spool)) {}

RunEventLog::~RunEventLog() { stop_uploader(); }

void RunEventLog::emit(const std::string& type, nlohmann::json data) {
  std::lock_guard<std::mutex> l(mu_);
  if (spool_removed_) return;
  Event e;
  e.job_id = spool_.job_id();
  e.run_id = spool_.run_id();
  e.seq = spool_.last_seq() + 1;
  e.ts_ms = clock_->now_ms();
  e.type = type;
  e.data = data.is_object() ? std::move(data) : nlohmann::json{{"value", std::move(data)}};
  if (auto r = spool_.append({e}); !r) {
    log::error("agent", "run ", e.run_id, ": dropping event ", type, ": ", r.error().message);
    if (spool_error_.empty()) spool_error_ = r.error().message;
    return;
  }
  if (spool_.last_seq() - spool_.acked() >= static_cast<std::int64_t>(kBatchMax)) cv_.notify_all();
}

void RunEventLog::start_uploader() {
  std::lock_guard<std::mutex> l(mu_);
  if (uploader_.joinable()) return;
  quit_ = false;
  uploader_ = std::thread([this] { uploader_loop(); });
}

void RunEventLog::stop_uploader() {
  {
    std::lock_guard<std::mutex> l(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  if (uploader_.joinable()) uploader_.join();
}

std::int64_t RunEventLog::acked() const {
  std::lock_guard<std::mutex> l(mu_);
  return spool_.acked();
}

std::string RunEventLog::spool_error() const {
  std::lock_guard<std::mutex> l(mu_);
  return spool_error_;
}

std::int64_t RunEventLog::last_seq() const {
  std::lock_guard<std::mutex> l(mu_);
  return spool_.last_seq();
}

void RunEventLog::discard_spool() {
  std::lock_guard<std::mutex> l(mu_);
  if (spool_removed_) return;
  spool_.remove();
  spool_removed_ = true;
}

Result<void> RunEventLog::upload_once() {
  std::lock_guard<std::mutex> one(upload_mu_);
  std::vector<Event> batch;
  std::int64_t run = 0, token = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (spool_removed_ || stale_) return ok_result();
    batch = spool_.pending(kBatchMax);
    run = spool_.run_id();
    token = spool_.fencing_token();
  }
  if (batch.empty()) return ok_result();
  auto r = transport_.upload_events(run, token, batch);
  if (!r) {
    if (r.error().code == Errc::conflict) {
      log::warn("agent", "run ", run, ": kfleetd refused its events (", r.error().message,
                "): the run is no longer ours; stopping it and dropping its spool");
      stale_ = true;
      discard_spool();
      if (on_stale_) on_stale_();
    }
    return r.error();
  }
  std::lock_guard<std::mutex> l(mu_);
  if (spool_removed_) return ok_result();
  if (auto a = spool_.ack(r->contiguous); !a) return a;
  if (r->contiguous < batch.back().seq)
    log::debug("agent", "run ", run, ": kfleetd holds up to seq ", r->contiguous,
               " of ", batch.back().seq, "; resending from there");
  return ok_result();
}

void RunEventLog::uploader_loop() {
  Backoff backoff;
  while (true) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, kBatchPeriod, [&] {
        return quit_ || urgent_ ||
               spool_.last_seq() - spool_.acked() >= static_cast<std::int64_t>(kBatchMax);
      });
      if (quit_) return;
      urgent_ = false;
    }
    auto r = upload_once();
    if (stale_) return;
    if (r) {
      if (backoff.attempts() > 0) log::info("agent", "event upload works again");
      backoff.reset();
      cv_.notify_all();  // drain() may be waiting for the watermark
      continue;
    }
    auto wait = backoff.next();
    log::warn("agent", "event upload failed (attempt ", backoff.attempts(), "): ",
              r.error().message, "; events stay spooled, retrying in ", wait.count(), " ms");
    std::unique_lock<std::mutex> l(mu_);
    if (cv_.wait_for(l, wait, [&] { return quit_; })) return;
  }
}

bool RunEventLog::drain(std::chrono::milliseconds max_wait) {
  auto deadline = std::chrono::steady_clock::now() + max_wait;
  std::unique_lock<std::mutex> l(mu_);
  urgent_ = true;
  cv_.notify_all();
  while (!(spool_removed_ || stale_ || spool_.acked() >= spool_.last_seq())) {
    if (!uploader_.joinable()) {
      // No uploader thread (tests, recovery): upload inline.
      l.unlock();
      auto r = upload_once();
      l.lock();
      if (!r && std::chrono::steady_clock::now() >= deadline) break;
      if (!r) {
        l.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        l.lock();
      }
      continue;
    }
    if (cv_.wait_until(l, deadline) == std::cv_status::timeout) break;
    urgent_ = true;
    cv_.notify_all();
  }
  return !stale_ && spool_.acked() >= spool_.last_seq();
}

}  // namespace kfleet::agent
