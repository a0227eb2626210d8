#pragma once
// A run's events on disk before they go over the network: work-dir/spool/run-<id>.jsonl.
// Line 1 is a header {run_id, job_id, fencing_token}; then event lines and ack lines
// {"acked": N}. Appends are fsync'd per batch, so an agent that dies between upload and ack
// replays from the last ack: kfleetd ingests idempotently on (run, seq), so nothing duplicates,
// and since every event is on disk before it is sent, nothing is skipped.
#include <cstdint>
#include <string>
#include <vector>

#include "kfleet/common/event.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::agent {

class RunSpool {
 public:
  // Creates (truncating) the spool of a new run in dir (made if missing).
  static Result<RunSpool> create(const std::string& dir, std::int64_t run_id,
                                 std::int64_t job_id, std::int64_t fencing_token);
  // Reopens a spool left by an earlier agent process. A torn last line (crash mid-write) is
  // ignored: it was never acked, and its seq is reused.
  static Result<RunSpool> open(const std::string& path);
  // The spool files in dir, oldest run first.
  static std::vector<std::string> list(const std::string& dir);

  RunSpool(RunSpool&&) noexcept;
  RunSpool& operator=(RunSpool&&) noexcept;
  ~RunSpool();

  // Appends events (their seq must continue last_seq() + 1, ...) and fsyncs once.
  Result<void> append(const std::vector<Event>& events);
  // Records that kfleetd holds every seq up to `contiguous`; never moves backwards.
  Result<void> ack(std::int64_t contiguous);
  // Up to max events above the ack watermark, in seq order.
  std::vector<Event> pending(std::size_t max) const;

  std::int64_t run_id() const { return run_id_; }
  std::int64_t job_id() const { return job_id_; }
  std::int64_t fencing_token() const { return token_; }
  std::int64_t acked() const { return acked_; }
  std::int64_t last_seq() const { return last_seq_; }
  const std::string& path() const { return path_; }
  // Deletes the file; the object must not be used afterwards.
  void remove();

 private:
  RunSpool() = default;
  Result<void> write_lines(const std::string& text);

  std::string path_;
  int fd_ = -1;
  std::int64_t run_id_ = 0, job_id_ = 0, token_ = 0;
  std::int64_t acked_ = 0, last_seq_ = 0;
  std::vector<Event> unacked_;  // seq order; all have seq > acked_
};

std::string spool_path(const std::string& dir, std::int64_t run_id);

}  // namespace kfleet::agent
