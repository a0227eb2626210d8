#pragma once
#include <chrono>
#include <thread>

namespace kfleet::provision::testing {

// Polls `ready` until it holds or `deadline` passes; returns its last answer.
template <class Pred>
bool wait_until(std::chrono::steady_clock::duration deadline, Pred ready) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= until) return ready();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // poll interval, not a sync point
  }
  return true;
}

}  // namespace kfleet::provision::testing
