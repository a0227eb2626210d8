#pragma once
// What the API tests share: a control plane with its HTTP API listening on loopback (port 0),
// run on an io_context by a thread of the test's, and a job's submit body.
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "kfleet/api/server.hpp"
#include "kfleet/common/bundle.hpp"

namespace kfleet::api::test {

// The first admin token of the tests' control planes (core::Config::admin_token).
inline constexpr const char* kAdmin = "kft_test-admin-0123456789abcdef0123456789";

// A control plane (cfg) on `st` and its API (so) on io, listening; `url` is where. Throws when
// it cannot listen.
struct Served {
  std::unique_ptr<core::ControlPlane> cp;
  std::unique_ptr<Server> server;
  std::string url;
  Served(boost::asio::io_context& io, store::Store& st, provision::Provisioner& prov,
         const core::Config& cfg, const ServerOptions& so = {}, bool https = false)
      : cp(std::make_unique<core::ControlPlane>(io.get_executor(), st,
                                                std::make_shared<SystemClock>(), prov, cfg)),
        server(std::make_unique<Server>(io, *cp, so)) {
    auto port = server->listen();
    if (!port) throw std::runtime_error(port.error().message);
    url = std::string(https ? "https" : "http") + "://127.0.0.1:" + std::to_string(*port);
  }
};

// What a test's control plane runs on: a SQLite store in memory and the static provisioner.
struct Backing {
  store::StorePtr store = [] {
    auto st = store::open_sqlite_store({":memory:", false});
    if (!st) throw std::runtime_error(st.error().message);
    return std::move(*st);
  }();
  provision::ProvisionerPtr prov = provision::make_static_provisioner();
};

// Runs io on a thread of its own from run() until the object goes.
struct IoThread {
  boost::asio::io_context& io;
  std::thread thread;
  void run() {
    thread = std::thread([this] { io.run(); });
  }
  void stop() {
    io.stop();
    if (thread.joinable()) thread.join();
  }
  ~IoThread() { stop(); }
};

// The YAML of a simulated L4 job named `name` with one source file, k.cu.
inline std::string job_yaml(const std::string& name) {
  return "name: " + name + "\ntarget: {gpu: L4}\nkernel:\n  family: attention\n  language: cuda\n"
         "  sources: [k.cu]\nsimulate: {time_us: 50, stage_ms: 1}\n";
}

// POST /api/v1/jobs's body for that YAML, its one source file named `source`.
inline nlohmann::json submit_body(const std::string& yaml, const std::string& source = "k.cu") {
  Bundle b;
  b.files.push_back({source, "__global__ void k() {}\n"});
  return {{"spec_yaml", yaml}, {"source_name", "job.yaml"}, {"bundle", bundle_to_json(b)}};
}

// A submit of a new job (`force`: not the no-repeat map's answer).
inline nlohmann::json job_body(const std::string& name) {
  auto body = submit_body(job_yaml(name));
  body["force"] = true;
  return body;
}

// An agent's enrolment: one simulated L4 in r1.
inline nlohmann::json enrol_body(const std::string& name) {
  return {{"name", name}, {"region", "r1"}, {"backend", "simulated"},
          {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}};
}

}  // namespace kfleet::api::test
