#pragma once
// Time is injected: only SystemClock reads the real clock. Everything stores milliseconds
// since the Unix epoch (TimeMs) so that the store, the API and the scheduler agree.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace kfleet {

using TimeMs = std::int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeMs now_ms() const = 0;
};
using ClockPtr = std::shared_ptr<Clock>;

class SystemClock final : public Clock {
 public:
  TimeMs now_ms() const override;
};

// A clock that only moves when told to: for tests of timeouts, leases, region blocks and rate
// limits. Atomic: a test moves it while the server's threads read it.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeMs start = 1'700'000'000'000) : now_(start) {}
  TimeMs now_ms() const override { return now_.load(); }
  void advance_ms(TimeMs d) { now_ += d; }
  void set_ms(TimeMs t) { now_ = t; }

 private:
  std::atomic<TimeMs> now_;
};

// "2026-11-21T05:44:33.123Z"
std::string format_iso8601(TimeMs t);

}  // namespace kfleet
