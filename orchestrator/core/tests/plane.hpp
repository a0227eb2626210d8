// The core tests' control plane: an in-memory SQLite store (or a file, when a test must watch the
// database from outside), a static provisioner and a clock the test moves, on an io_context the
// test runs. No HTTP and no agent process: a test calls the control plane as the API would.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "kfleet/common/bundle.hpp"
#include "kfleet/core/control_plane.hpp"
#include "kfleet/provision/provisioner.hpp"

namespace kfleet::core::test {

// The static fleet, with an hourly price for the instances `price` names (as a cloud's has).
class PricedFleet final : public provision::Provisioner {
 public:
  using Price = std::function<std::optional<double>(const std::string& instance_id)>;
  explicit PricedFleet(Price price) : price_(std::move(price)) {}
  std::string name() const override { return fleet_->name(); }
  bool can_grow() const override { return fleet_->can_grow(); }
  int capacity_budget() const override { return fleet_->capacity_budget(); }
  std::vector<std::string> regions() const override { return fleet_->regions(); }
  std::vector<std::string> gpu_classes() const override { return fleet_->gpu_classes(); }
  void request(const provision::CapacityRequest& r,
               std::function<void(provision::CapacityResult)> done) override {
    fleet_->request(r, std::move(done));
  }
  void release(const std::string& id, std::function<void(Result<void>)> done) override {
    fleet_->release(id, std::move(done));
  }
  std::optional<double> usd_per_hour(const std::string& id) const override { return price_(id); }

 private:
  provision::ProvisionerPtr fleet_ = provision::make_static_provisioner();
  Price price_;
};

// A job's one source file, k.cu.
inline Bundle k_cu() {
  Bundle b;
  b.files.push_back({"k.cu", "// k\n"});
  return b;
}

// A verdict as an agent sends it: the outcome, the gate that rejected it, the comparison with
// what it was measured against, its median and its reason.
inline Verdict verdict_of(RunOutcome outcome, const std::string& gate, const std::string& perf,
                          std::optional<double> median_us, const std::string& reason = "") {
  Verdict v;
  v.outcome = outcome;
  v.gate = gate;
  v.perf = perf;
  v.median_us = median_us;
  v.reason = reason;
  return v;
}

struct Plane {
  boost::asio::io_context io;
  std::unique_ptr<store::Store> st;
  provision::ProvisionerPtr prov;
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  std::unique_ptr<ControlPlane> cp;

  // cfg as given, with "e" as the fleet's enrolment token; the static provisioner unless `p`;
  // the store in `db` (a SQLite file when a test watches the database from outside).
  explicit Plane(Config cfg = {}, provision::ProvisionerPtr p = nullptr,
                 const std::string& db = ":memory:")
      : prov(p ? std::move(p) : provision::make_static_provisioner()) {
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

  // Submits a job from its YAML as `user`: its id, or 0 and a failure saying why it was refused.
  std::int64_t submit(const std::string& yaml, const std::string& user = "test",
                      const Bundle& b = k_cu()) {
    SubmitRequest sr{yaml, "job.yaml", bundle_to_json(b), true, user};
    auto r = cp->submit(sr);
    if (auto* e = std::get_if<SubmitError>(&r)) {
      ADD_FAILURE() << e->error.message;
      for (const auto& i : e->issues) ADD_FAILURE() << i.message;
      return 0;
    }
    return std::get<SubmitResult>(r).job.id;
  }

  // A long-poll of `agent` under way: `done` once it answered, `got` the offer it made, if any.
  struct Poll {
    std::optional<LeaseOffer> got;
    bool done = false;
  };
  // Starts one and runs what is ready (the pass it asks for), leaving it waiting if no job is.
  std::shared_ptr<Poll> start_poll(std::int64_t agent, int timeout_ms = 5000) {
    auto poll = std::make_shared<Poll>();
    boost::asio::co_spawn(
        io,
        [this, agent, timeout_ms, poll]() -> boost::asio::awaitable<void> {
          auto r = co_await cp->wait_for_lease(agent, timeout_ms);
          if (r.ok() && r->has_value()) poll->got = **r;
          poll->done = true;
        },
        boost::asio::detached);
    io.restart();
    io.poll();
    return poll;
  }
  // Runs the io until the poll has answered (or nothing is left to run for `limit`).
  std::optional<LeaseOffer> finish_poll(Poll& poll, std::chrono::milliseconds limit) {
    io.restart();
    while (!poll.done && io.run_one_for(limit)) {
    }
    return poll.got;
  }
  // One long-poll of `agent` (waiting up to timeout_ms): the offer kfleetd makes it, if any.
  std::optional<LeaseOffer> wait_offer(std::int64_t agent, int timeout_ms = 5000) {
    auto poll = start_poll(agent, timeout_ms);
    return finish_poll(*poll, std::chrono::milliseconds(timeout_ms + 5000));
  }
  // Leases `job` to `agent` and finishes its run with `v`; the lease (a refusal fails the test).
  Result<store::Lease> run_to_verdict(std::int64_t job, std::int64_t agent, const Verdict& v) {
    auto lease = st->grant_lease(job, agent, 60'000, clock->now_ms());
    EXPECT_TRUE(lease.ok()) << lease.error().message;
    if (!lease) return lease;
    auto f = cp->finish(agent, lease->run_id, lease->fencing_token, v);
    EXPECT_TRUE(f.ok()) << f.error().message;
    return lease;
  }
  // Runs queued passes (and the passes they ask for) for up to `limit`.
  void settle(std::chrono::seconds limit) {
    io.restart();
    io.run_for(limit);
  }
};

}  // namespace kfleet::core::test
