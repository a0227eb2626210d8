// What a fleet's history leaves behind: a lost agent is retired once it has been silent past
// the grace period (its row kept, its token dead), and the live fleet the control plane reads
// on every pass no longer carries it.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>

#include <boost/asio/io_context.hpp>

#include "kfleet/core/control_plane.hpp"
#include "kfleet/provision/provisioner.hpp"

namespace kfleet::core {
namespace {

struct Plane {
  boost::asio::io_context io;
  std::unique_ptr<store::Store> st;
  provision::ProvisionerPtr prov = provision::make_static_provisioner();
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  std::unique_ptr<ControlPlane> cp;
  explicit Plane(TimeMs retire_ms) {
    auto s = store::open_sqlite_store({":memory:"});
    EXPECT_TRUE(s.ok());
    st = std::move(*s);
    Config cfg;
    cfg.enrol_token = "e";
    cfg.lease_ttl_ms = 1'000;
    cfg.tick_ms = 1;
    cfg.lost_agent_retire_ms = retire_ms;
    cp = std::make_unique<ControlPlane>(io.get_executor(), *st, clock, *prov, cfg);
  }
  ~Plane() { cp->stop(); }

  EnrolResult enrol(const std::string& name) {
    EnrolRequest er{name, "us-east-1", "simulated", "static", "", {}, {}};
    GpuInfo g;
    g.gpu_class = "L4";
    g.simulated = true;
    er.gpus = {g};
    auto r = cp->enrol(er);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : EnrolResult{};
  }

  store::AgentState state(std::int64_t id) { return st->get_agent(id)->state; }

  // Runs the control plane's ticks until `done` holds (false after the deadline).
  bool run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io.restart();
      io.run_for(std::chrono::milliseconds(5));
    }
    return true;
  }
};

TEST(AgentRetirement, ALostAgentIsRetiredAfterTheGracePeriodAndItsRowKept) {
  Plane p(60'000);
  p.clock->set_ms(1'000'000);
  auto gone = p.enrol("spot-1");
  auto alive = p.enrol("static-1");
  p.cp->start();
  p.clock->advance_ms(2'000);  // past the lease TTL: both silent agents are lost
  ASSERT_TRUE(p.run_until([&] { return p.state(gone.agent_id) == store::AgentState::lost; }));
  ASSERT_TRUE(p.st->touch_agent(alive.agent_id, p.clock->now_ms()).ok());  // this one speaks again
  ASSERT_TRUE(p.run_until([&] { return p.state(alive.agent_id) == store::AgentState::idle; }));

  p.clock->advance_ms(30'000);  // within the grace period: still lost, still in the live fleet
  p.io.restart();
  p.io.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(p.state(gone.agent_id), store::AgentState::lost);
  EXPECT_TRUE(p.cp->is_agent_token(gone.agent_id, gone.token));

  p.clock->advance_ms(31'000);  // 61 s silent: retired; the other one spoke just now
  ASSERT_TRUE(p.st->touch_agent(alive.agent_id, p.clock->now_ms()).ok());
  ASSERT_TRUE(p.run_until([&] { return p.state(gone.agent_id) == store::AgentState::retired; }));
  EXPECT_FALSE(p.cp->is_agent_token(gone.agent_id, gone.token));  // it must enrol again
  auto live = p.st->list_agents();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].id, alive.agent_id);
  store::AgentFilter all;
  all.include_retired = true;
  EXPECT_EQ(p.st->list_agents(all).size(), 2u);  // history kept
}

TEST(AgentRetirement, ZeroKeepsLostAgentsForever) {
  Plane p(0);
  p.clock->set_ms(1'000'000);
  auto gone = p.enrol("spot-1");
  p.cp->start();
  p.clock->advance_ms(2'000);
  ASSERT_TRUE(p.run_until([&] { return p.state(gone.agent_id) == store::AgentState::lost; }));
  p.clock->advance_ms(365LL * 24 * 3'600'000);
  p.io.restart();
  p.io.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(p.state(gone.agent_id), store::AgentState::lost);
}

}  // namespace
}  // namespace kfleet::core
