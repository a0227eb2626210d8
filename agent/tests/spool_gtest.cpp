// The run spool and the uploader: append, ack, replay after reopen, and no duplicates or gaps
// across a crash between upload and ack.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fake_transport.hpp"
#include "kfleet/agent/run_events.hpp"
#include "kfleet/agent/spool.hpp"
#include "kfleet/testing/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;

namespace {

Event ev(std::int64_t seq) {
  Event e;
  e.run_id = 5;
  e.seq = seq;
  e.type = "log";
  e.data = {{"text", "line " + std::to_string(seq)}};
  return e;
}

void expect_gap_free(const std::vector<Event>& events, std::int64_t n) {
  ASSERT_EQ(static_cast<std::int64_t>(events.size()), n);
  for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(events[i].seq, i + 1);
}

}  // namespace

TEST(RunSpool, AppendAckAndReplayAfterReopen) {
  const kfleet::testing::TempDir tmp("kfleet-agent-spool");
  const std::string dir = tmp.str();
  {
    auto s = RunSpool::create(dir, 5, 3, 11);
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_TRUE(s->append({ev(1), ev(2), ev(3)}).ok());
    ASSERT_TRUE(s->ack(2).ok());
    ASSERT_TRUE(s->append({ev(4)}).ok());
    ASSERT_TRUE(s->ack(1).ok());  // never moves backwards
    EXPECT_EQ(s->acked(), 2);
  }
  auto files = RunSpool::list(dir);
  ASSERT_EQ(files.size(), 1u);
  auto s = RunSpool::open(files[0]);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->run_id(), 5);
  EXPECT_EQ(s->job_id(), 3);
  EXPECT_EQ(s->fencing_token(), 11);
  EXPECT_EQ(s->acked(), 2);
  EXPECT_EQ(s->last_seq(), 4);
  auto p = s->pending(100);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].seq, 3);
  EXPECT_EQ(p[1].seq, 4);
  EXPECT_EQ(p[1].data["text"], "line 4");
  s->remove();
  EXPECT_TRUE(RunSpool::list(dir).empty());
}

TEST(RunSpool, TornLastLineIsIgnoredAndItsSeqReused) {
  const kfleet::testing::TempDir tmp("kfleet-agent-torn");
  const std::string dir = tmp.str();
  {
    auto s = RunSpool::create(dir, 9, 1, 1);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(s->append({ev(1), ev(2)}).ok());
  }
  {
    std::ofstream out(spool_path(dir, 9), std::ios::app);
    out << R"({"seq":3,"type":"lo)";  // the agent died mid-write
  }
  auto s = RunSpool::open(spool_path(dir, 9));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->last_seq(), 2);
  EXPECT_EQ(s->pending(10).size(), 2u);
}

TEST(RunEventLog, CrashBetweenUploadAndAckNeitherDuplicatesNorSkips) {
  const kfleet::testing::TempDir tmp("kfleet-agent-crash");
  const std::string dir = tmp.str();
  kfleet::testing::FakeKfleetd server;
  auto clock = std::make_shared<ManualClock>();
  {
    auto s = RunSpool::create(dir, 5, 3, 11);
    ASSERT_TRUE(s.ok());
    RunEventLog log(server, std::move(*s), clock);
    for (int i = 0; i < 3; ++i) log.emit("log", {{"text", "a"}});
    ASSERT_TRUE(log.upload_once().ok());
    EXPECT_EQ(log.acked(), 3);
    for (int i = 0; i < 4; ++i) log.emit("log", {{"text", "b"}});
    server.lose_next_answer = true;  // stored by the server, but the ack never arrives
    EXPECT_FALSE(log.upload_once().ok());
    EXPECT_EQ(log.acked(), 3);
    log.emit("log", {{"text", "c"}});
    // The agent "crashes" here: the object goes away with seq 4..8 unacked.
  }
  auto s = RunSpool::open(spool_path(dir, 5));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->acked(), 3);
  EXPECT_EQ(s->last_seq(), 8);
  RunEventLog replay(server, std::move(*s), clock);
  replay.emit("log", {{"text", "after restart"}});  // numbering continues, no reuse
  EXPECT_TRUE(replay.drain(std::chrono::seconds(5)));
  EXPECT_EQ(replay.acked(), 9);
  expect_gap_free(server.stored(5), 9);
  EXPECT_EQ(server.stored(5)[8].data["text"], "after restart");
  // Seq 4..7 reached the server twice; ingestion counted them as duplicates, not new rows.
  EXPECT_EQ(server.duplicates, 4);
}

TEST(RunEventLog, UploaderRetriesThroughAnOutageWithoutGaps) {
  const kfleet::testing::TempDir tmp("kfleet-agent-outage");
  const std::string dir = tmp.str();
  kfleet::testing::FakeKfleetd server;
  auto s = RunSpool::create(dir, 6, 3, 11);
  ASSERT_TRUE(s.ok());
  RunEventLog log(server, std::move(*s), std::make_shared<SystemClock>());
  {
    std::lock_guard<std::mutex> l(server.mu);
    server.unreachable = true;
  }
  log.start_uploader();
  for (int i = 0; i < 700; ++i) log.emit("log", {{"i", i}});
  EXPECT_FALSE(log.drain(std::chrono::milliseconds(200)));
  {
    std::lock_guard<std::mutex> l(server.mu);
    server.unreachable = false;
  }
  EXPECT_TRUE(log.drain(std::chrono::seconds(30)));
  log.stop_uploader();
  expect_gap_free(server.stored(6), 700);
  for (const auto& e : server.stored(6)) EXPECT_EQ(e.data["i"], e.seq - 1);
}

TEST(RunEventLog, StaleTokenStopsTheRunAndDropsTheSpool) {
  const kfleet::testing::TempDir tmp("kfleet-agent-stale");
  const std::string dir = tmp.str();
  kfleet::testing::FakeKfleetd server;
  server.stale_runs.insert(8);
  auto s = RunSpool::create(dir, 8, 3, 11);
  ASSERT_TRUE(s.ok());
  bool stale_called = false;
  RunEventLog log(server, std::move(*s), std::make_shared<SystemClock>(),
                  [&] { stale_called = true; });
  log.emit("log", {{"text", "x"}});
  auto r = log.upload_once();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::conflict);
  EXPECT_TRUE(stale_called);
  EXPECT_TRUE(log.stale());
  EXPECT_FALSE(fs::exists(spool_path(dir, 8)));
}
