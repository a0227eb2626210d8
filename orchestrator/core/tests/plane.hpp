// The core tests' control plane: an in-memory SQLite store, a static provisioner and a clock the
// test moves, on an io_context the test runs. No HTTP and no agent process: a test calls the
// control plane as the API would.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>

#include "kfleet/common/bundle.hpp"

#include "kfleet/core/control_plane.hpp"
#include "kfleet/provision/provisioner.hpp"

namespace kfleet::core::test {

struct Plane {
  boost::asio::io_context io;
  std::unique_ptr<store::Store> st;
  provision::ProvisionerPtr prov = provision::make_static_provisioner();
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  std::unique_ptr<ControlPlane> cp;

  // cfg as given, with "e" as the fleet's enrolment token.
  explicit Plane(Config cfg = {}) {
    auto s = store::open_sqlite_store({":memory:"});
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

  // Submits `yaml` (its one source k.cu) as carol: the job's id, or 0 and a test failure.
  std::int64_t submit_yaml(const std::string& yaml) {
    Bundle b;
    b.files.push_back({"k.cu", "// k\n"});
    SubmitRequest sr{yaml, "job.yaml", bundle_to_json(b), true, "carol"};
    auto r = cp->submit(sr);
    if (auto* e = std::get_if<SubmitError>(&r)) {
      ADD_FAILURE() << e->error.message;
      for (const auto& i : e->issues) ADD_FAILURE() << i.message;
      return 0;
    }
    return std::get<SubmitResult>(r).job.id;
  }

  // One long-poll of `agent`: the offer kfleetd makes it, if any.
  std::optional<LeaseOffer> offer_to(std::int64_t agent) {
    std::optional<LeaseOffer> got;
    bool done = false;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          auto r = co_await cp->wait_for_lease(agent, 5000);
          if (r.ok() && r->has_value()) got = **r;
          done = true;
        },
        boost::asio::detached);
    io.restart();
    while (!done && io.run_one_for(std::chrono::seconds(10))) {
    }
    return got;
  }
};

}  // namespace kfleet::core::test
