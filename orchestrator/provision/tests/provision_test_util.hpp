#pragma once
// Helpers for the provisioner tests: run the executor until a condition holds, with a deadline.
#include <chrono>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "kfleet/provision/simulated_cloud.hpp"
#include "kfleet/testing/temp_dir.hpp"

namespace kfleet::provision::testing {

template <class Pred>
bool run_until(boost::asio::io_context& io, Pred done,
               std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    io.restart();
    // With nothing queued run_for returns at once; the pause keeps the poll off the CPU.
    if (io.run_for(std::chrono::milliseconds(5)) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// A fresh folder under $TMPDIR, removed on destruction.
using TempDir = kfleet::testing::TempDir;

inline SimulatedCloudConfig one_region(const std::string& work_root, int capacity,
                                       std::vector<std::string> script = {}) {
  SimulatedCloudConfig c;
  c.agent_binary = KFLEET_FAKE_AGENT;
  c.server_url = "http://127.0.0.1:1";
  c.enrol_token = "tok";
  c.work_root = work_root;
  c.max_instances = 8;
  c.release_grace_ms = 5000;
  SimulatedRegion r;
  r.name = "us-east-1";
  r.capacity = capacity;
  r.script = std::move(script);
  c.regions.push_back(r);
  return c;
}

}  // namespace kfleet::provision::testing
