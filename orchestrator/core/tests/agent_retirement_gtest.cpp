// What a fleet's history leaves behind: a lost agent is retired once it has been silent past
// the grace period (its row kept, its token dead), and the live fleet the control plane reads
// on every pass no longer carries it.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>

#include "plane.hpp"

namespace kfleet::core {
namespace {

Config retiring(TimeMs retire_ms) {
  Config cfg;
  cfg.lease_ttl_ms = 1'000;
  cfg.tick_ms = 1;
  cfg.lost_agent_retire_ms = retire_ms;
  return cfg;
}

struct RetirementPlane : test::Plane {
  explicit RetirementPlane(TimeMs retire_ms) : test::Plane(retiring(retire_ms)) {}

  EnrolResult enrol(const std::string& name) { return enrol_agent(name, "L4", /*simulated=*/true); }

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
  RetirementPlane p(60'000);
  p.clock->set_ms(1'000'000);
  auto gone = p.enrol("spot-1");
  auto alive = p.enrol("static-1");
  p.cp->start();
  p.clock->advance_ms(2'000);  // past the lease TTL: both silent agents are lost
  ASSERT_TRUE(p.run_until([&] { return p.state(gone.agent_id) == store::AgentState::lost; }));
  ASSERT_TRUE(p.cp->heartbeat(alive.agent_id, 0, 0).ok());  // this one speaks again
  ASSERT_TRUE(p.run_until([&] { return p.state(alive.agent_id) == store::AgentState::idle; }));

  p.clock->advance_ms(30'000);  // within the grace period: still lost, still in the live fleet
  p.io.restart();
  p.io.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(p.state(gone.agent_id), store::AgentState::lost);
  EXPECT_TRUE(p.cp->is_agent_token(gone.agent_id, gone.token));

  p.clock->advance_ms(31'000);  // 61 s silent: retired; the other one spoke just now
  ASSERT_TRUE(p.cp->heartbeat(alive.agent_id, 0, 0).ok());
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
  RetirementPlane p(0);
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
