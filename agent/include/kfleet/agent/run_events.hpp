#pragma once
// The event stream of one run: numbers what the pipeline and the backend emit (seq 1, 2, 3,
// ...), stamps it, spools it to disk, and uploads it in batches from its own thread. The ack
// watermark only moves on kfleetd's `contiguous`, so retries never duplicate and a lost
// connection never leaves a gap.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "kfleet/agent/backend.hpp"
#include "kfleet/agent/backoff.hpp"
#include "kfleet/agent/spool.hpp"
#include "kfleet/agent/transport.hpp"
#include "kfleet/common/clock.hpp"

namespace kfleet::agent {

class RunEventLog final : public EventSink {
 public:
  static constexpr std::size_t kBatchMax = 500;
  static constexpr std::chrono::milliseconds kBatchPeriod{50};

  // on_stale runs (once, on the uploader thread) when kfleetd says the run is no longer ours.
  RunEventLog(Transport& t, RunSpool spool, ClockPtr clock,
              std::function<void()> on_stale = nullptr);
  ~RunEventLog() override;
  RunEventLog(const RunEventLog&) = delete;
  RunEventLog& operator=(const RunEventLog&) = delete;

  // Thread-safe. A spool write failure is logged and the event dropped before it got a seq,
  // so the numbering stays gap-free.
  void emit(const std::string& type, nlohmann::json data) override;

  void start_uploader();
  // Uploads until everything is acked, the run turns stale, or max_wait passes. True when
  // every event is acked.
  bool drain(std::chrono::milliseconds max_wait);
  // Stops the uploader thread (idempotent).
  void stop_uploader();
  // One synchronous upload of the next batch (the uploader's step; also spool recovery).
  Result<void> upload_once();

  bool stale() const { return stale_.load(); }
  std::int64_t acked() const;
  std::int64_t last_seq() const;
  // Why the first event was dropped (the spool could not be written: a full disk); "" if none.
  std::string spool_error() const;
  // Deletes the spool file: after a finished run, or when the run is no longer ours.
  void discard_spool();

 private:
  void uploader_loop();

  Transport& transport_;
  ClockPtr clock_;
  std::function<void()> on_stale_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  RunSpool spool_;
  bool spool_removed_ = false;
  std::string spool_error_;
  bool quit_ = false;
  bool urgent_ = false;  // drain() wants the next batch now
  std::atomic<bool> stale_{false};
  std::mutex upload_mu_;  // one upload in flight at a time
  std::thread uploader_;
};

}  // namespace kfleet::agent
