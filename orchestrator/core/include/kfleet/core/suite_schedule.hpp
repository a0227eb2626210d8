#pragma once
// Suites kfleetd runs on their `schedule:` (kfleetd --suite FILE): each fire re-reads the
// suite and its jobs from disk (so edits apply to the next run) and starts a regression run.
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "kfleet/core/control_plane.hpp"
#include "kfleet/core/cron.hpp"

namespace kfleet::core {

class SuiteSchedule {
 public:
  SuiteSchedule(boost::asio::any_io_executor ex, ControlPlane& cp);
  // Registers a suite file; invalid_argument if it cannot be read or has no valid schedule.
  Result<void> add(const std::string& suite_path);
  void start();
  void stop();
  // Starts every suite whose fire time is <= now; returns how many started. The timer calls
  // it; tests call it with a ManualClock.
  int run_due();
  // When the next suite fires (0 if none is registered).
  TimeMs next_fire_ms() const;

 private:
  struct Entry {
    std::string path, name;
    CronSchedule cron;
    TimeMs next = 0;
  };
  void arm();

  ControlPlane& cp_;
  std::vector<Entry> entries_;
  boost::asio::steady_timer timer_;
  bool stopped_ = false;
};

}  // namespace kfleet::core
