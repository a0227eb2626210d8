// The core tests' control plane: an in-memory SQLite store (or a file, when a test must watch the
// database from outside), a static provisioner and a clock the test moves, on an io_context the
// test runs. No HTTP and no agent process: a test calls the control plane as the API would.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include <boost/asio/io_context.hpp>

#include "kfleet/core/control_plane.hpp"
#include "kfleet/provision/provisioner.hpp"

namespace kfleet::core::test {

struct Plane {
  boost::asio::io_context io;
  std::unique_ptr<store::Store> st;
  provision::ProvisionerPtr prov = provision::make_static_provisioner();
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  std::unique_ptr<ControlPlane> cp;

  // cfg as given, with "e" as the fleet's enrolment token; the store in `db` (a SQLite file).
  explicit Plane(Config cfg = {}, const std::string& db = ":memory:") {
    auto s = store::open_sqlite_store({db});
    EXPECT_TRUE(s.ok());
    st = std::move(*s);
    cfg.enrol_token = "e";
    cp = std::make_unique<ControlPlane>(io.get_executor(), *st, clock, *prov, std::move(cfg));
  }
  ~Plane() { cp->stop(); }
  Plane(const Plane&) = delete;
  Plane& operator=(const Plane&) = delete;

  // An agent with one GPU of class `gpu`: simulated, or a CUDA one of arch sm_89.
  EnrolResult enrol_agent(const std::string& name, const std::string& gpu, bool simulated) {
    EnrolRequest er{name, "us-east-1", simulated ? "simulated" : "cuda", "static", "", {}, {}};
    GpuInfo g;
    g.gpu_class = gpu;
    g.simulated = simulated;
    if (!simulated) g.arch = "sm_89";
    er.gpus = {g};
    auto r = cp->enrol(er);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : EnrolResult{};
  }
};

}  // namespace kfleet::core::test
