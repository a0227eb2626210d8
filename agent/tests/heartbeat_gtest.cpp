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

}  // namespace

TEST(Heartbeat, CutOffPastTheLeaseTtlStopsTheRunOnce) {
  kfleet::testing::FakeKfleetd server;
  auto clock = std::make_shared<ManualClock>();
  Heartbeater hb(server, 7, 1000, 3000, clock);
  Stops stops;
  hb.set_run(5, 11, stops.fn());
  server.unreachable = true;
  hb.beat_once();
  clock->advance_ms(2000);
  hb.beat_once();
  EXPECT_EQ(stops.count, 0);  // silent 2 s < TTL 3 s: kfleetd still holds our lease
  clock->advance_ms(1500);
  hb.beat_once();
  EXPECT_EQ(stops.count, 1);
  EXPECT_NE(stops.why.find("cut off from kfleetd for 3s > lease TTL"), std::string::npos) << stops.why;
  clock->advance_ms(1500);
  hb.beat_once();
  EXPECT_EQ(stops.count, 1);
  EXPECT_EQ(server.last_heartbeat_run, 5);
}

TEST(Heartbeat, ASuccessfulBeatResetsTheCutOff) {
  kfleet::testing::FakeKfleetd server;
  auto clock = std::make_shared<ManualClock>();
  Heartbeater hb(server, 7, 1000, 3000, clock);
  Stops stops;
  hb.set_run(5, 11, stops.fn());
  clock->advance_ms(2500);
  hb.beat_once();  // gets through
  server.unreachable = true;
  clock->advance_ms(2500);
  hb.beat_once();
  EXPECT_EQ(stops.count, 0);
  clock->advance_ms(1000);
  hb.beat_once();
  EXPECT_EQ(stops.count, 1);
}

TEST(Heartbeat, CancelAndLostLeaseStopTheRun) {
  kfleet::testing::FakeKfleetd server;
  auto clock = std::make_shared<ManualClock>();
  Heartbeater hb(server, 7, 1000, 3000, clock);
  Stops cancel;
  hb.set_run(5, 11, cancel.fn());
  hb.beat_once();
  EXPECT_EQ(cancel.count, 0);
  server.reply.cancel = true;
  hb.beat_once();
  EXPECT_EQ(cancel.count, 1);
  EXPECT_EQ(cancel.why, "cancelled");

  Stops lost;
  server.reply = {};
  server.reply.lease_valid = false;
  hb.set_run(6, 12, lost.fn());
  hb.beat_once();
  EXPECT_EQ(lost.count, 1);
  EXPECT_EQ(lost.why, "lease lost");
}

TEST(Heartbeat, IdleAgentNeverStopsAnything) {
  kfleet::testing::FakeKfleetd server;
  auto clock = std::make_shared<ManualClock>();
  Heartbeater hb(server, 7, 1000, 3000, clock);
  Stops stops;
  hb.set_run(5, 11, stops.fn());
  hb.clear_run();
  server.unreachable = true;
  clock->advance_ms(10000);
  hb.beat_once();
  EXPECT_EQ(stops.count, 0);
  EXPECT_EQ(server.last_heartbeat_run, 0);
}
