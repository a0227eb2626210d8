#pragma once
// Capped exponential backoff with ±20% jitter, so a fleet of agents that lost kfleetd at the
// same moment does not come back in lock-step.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <random>

namespace kfleet::agent {

class Backoff {
 public:
  explicit Backoff(std::chrono::milliseconds initial = std::chrono::milliseconds(250),
                   std::chrono::milliseconds cap = std::chrono::milliseconds(10000),
                   std::uint64_t seed = std::random_device{}())
      : initial_(initial), cap_(cap), next_(initial), rng_(seed) {}

  // The delay to wait before the next attempt; each call doubles the base up to the cap.
  std::chrono::milliseconds next() {
    auto base = next_;
    next_ = std::min(cap_, next_ * 2);
    ++attempts_;
    return jitter(base);
  }
  void reset() {
    next_ = initial_;
    attempts_ = 0;
  }
  int attempts() const { return attempts_; }

  // ±20% around d.
  std::chrono::milliseconds jitter(std::chrono::milliseconds d) {
    std::uniform_real_distribution<double> u(0.8, 1.2);
    return std::chrono::milliseconds(static_cast<std::int64_t>(static_cast<double>(d.count()) * u(rng_)));
  }

 private:
  std::chrono::milliseconds initial_, cap_, next_;
  int attempts_ = 0;
  std::mt19937_64 rng_;
};

// A stop signal that sleeping threads can wait on: shutdown wakes them at once.
class Interrupt {
 public:
  void trigger() {
    {
      std::lock_guard<std::mutex> l(mu_);
      set_ = true;
    }
    cv_.notify_all();
  }
  bool triggered() const {
    std::lock_guard<std::mutex> l(mu_);
    return set_;
  }
  // Sleeps up to d; returns false when interrupted.
  bool sleep_for(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> l(mu_);
    return !cv_.wait_for(l, d, [&] { return set_; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

}  // namespace kfleet::agent
