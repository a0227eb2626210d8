// Heartbeat answers and the cut-off rule, on a manual clock.
#include <gtest/gtest.h>

#include "fake_transport.hpp"
#include "kfleet/agent/heartbeat.hpp"

using namespace kfleet;
using namespace kfleet::agent;

namespace {

struct Stops {
  int count = 0;
  std::string why;
  Heartbeater::StopRun fn() {
    return [this](const std::string& w) {
      ++count;
      why = w;
    };
  }
};

// An agent's heartbeater (every 1 s, lease TTL 3 s) to an in-memory kfleetd, on a manual clock,
// holding run 5 (token 11).
struct Heartbeat : ::testing::Test {
  kfleet::testing::FakeKfleetd server;
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  Heartbeater hb{server, 7, 1000, 3000, clock};
  Stops stops;
  Heartbeat() { hb.set_run(5, 11, stops.fn()); }
  // Moves the clock on, then beats once.
  void beat_after(std::int64_t ms) {
    clock->advance_ms(ms);
    hb.beat_once();
  }
};

}  // namespace

TEST_F(Heartbeat, CutOffPastTheLeaseTtlStopsTheRunOnce) {
  server.unreachable = true;
  beat_after(0);
  beat_after(2000);
  EXPECT_EQ(stops.count, 0);  // silent 2 s < TTL 3 s: kfleetd still holds our lease
  beat_after(1500);
  EXPECT_EQ(stops.count, 1);
  EXPECT_NE(stops.why.find("cut off from kfleetd for 3s > lease TTL"), std::string::npos) << stops.why;
  beat_after(1500);
  EXPECT_EQ(stops.count, 1);
  EXPECT_EQ(server.last_heartbeat_run, 5);
}

TEST_F(Heartbeat, ASuccessfulBeatResetsTheCutOff) {
  beat_after(2500);  // gets through
  server.unreachable = true;
  beat_after(2500);
  EXPECT_EQ(stops.count, 0);
  beat_after(1000);
  EXPECT_EQ(stops.count, 1);
}

TEST_F(Heartbeat, CancelAndLostLeaseStopTheRun) {
  beat_after(0);
  EXPECT_EQ(stops.count, 0);
  server.reply.cancel = true;
  beat_after(0);
  EXPECT_EQ(stops.count, 1);
  EXPECT_EQ(stops.why, "cancelled");

  Stops lost;
  server.reply = {};
  server.reply.lease_valid = false;
  hb.set_run(6, 12, lost.fn());
  beat_after(0);
  EXPECT_EQ(lost.count, 1);
  EXPECT_EQ(lost.why, "lease lost");
}

TEST_F(Heartbeat, IdleAgentNeverStopsAnything) {
  hb.clear_run();
  server.unreachable = true;
  beat_after(10000);
  EXPECT_EQ(stops.count, 0);
  EXPECT_EQ(server.last_heartbeat_run, 0);
}
