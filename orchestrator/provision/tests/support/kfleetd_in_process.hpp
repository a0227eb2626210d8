#pragma once
// kfleetd's control plane, scheduler and HTTP API in process on a provisioner under test, and
// the calls its end-to-end tests make: a user's submit and reads, and an agent that enrols as a
// launched instance would, takes the job's lease and finishes it. Used by the Compute Engine and
// terraform provisioners' kfleetd tests (each brings its fake cloud and its provisioner).
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kfleet/api/server.hpp"
#include "kfleet/core/control_plane.hpp"
#include "wait_until.hpp"

namespace kfleet::provision::testing {

class KfleetdInProcess : public ::testing::Test {
 protected:
  // The executor kfleetd runs on, for the provisioner under test.
  boost::asio::any_io_executor executor() { return io_.get_executor(); }
  // Serves on 127.0.0.1 (port 0) from a SQLite store at `store_path` (":memory:" or a file),
  // with cfg.user_tokens[0] as the user's token and cfg.enrol_token for agents.
  void serve(Provisioner& prov, ClockPtr clock, core::Config cfg, const std::string& store_path);
  // Stops and destroys the API and the control plane, which refer to the provisioner: a
  // subclass's TearDown calls it before it shuts down or destroys its provisioner.
  void stop_serving();

  // A job for an L4 in `regions` (a simulated kernel), sent with force; its id, 0 on failure.
  std::int64_t submit(const std::string& name, const std::vector<std::string>& regions);
  nlohmann::json get(const std::string& path);  // as the user; expects 200
  nlohmann::json job(std::int64_t id);
  std::vector<nlohmann::json> events(std::int64_t id, const std::string& type);  // oldest first
  // The job's first capacity event with this outcome; the test fails without one, and stops
  // waiting early when provisioning stopped (a "fatal" answer) instead.
  nlohmann::json wait_for_capacity(std::int64_t id, const std::string& outcome,
                                   std::chrono::steady_clock::duration deadline);
  nlohmann::json block_for(const std::string& region);  // the fleet view's block, or null
  // Enrols an agent as the launched instance would (simulated backend, one L4), takes the
  // job's lease and finishes it passed. Returns the agent id.
  std::int64_t run_on_new_agent(std::int64_t job_id, const std::string& region, const std::string& instance,
                                const std::string& provider, const std::string& name);

  std::string url_;

 private:
  std::string user_token_, enrol_token_;
  boost::asio::io_context io_;
  store::StorePtr store_;
  std::unique_ptr<core::ControlPlane> cp_;
  std::unique_ptr<api::Server> server_;
  std::thread thread_;
};

}  // namespace kfleet::provision::testing
