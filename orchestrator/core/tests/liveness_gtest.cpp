// Liveness in memory, state changes in the store: a heartbeat or long poll of an agent whose
// state does not change writes nothing (watched from a second connection to the database
// file); a lost agent, an expired lease and a lease's stored expiry falling half a TTL behind
// are written when they happen. And the long poll at scale: a new job wakes one waiting agent,
// and an idle agent's poll costs a scheduling pass only when it could run a queued job.
#include <sqlite3.h>
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <vector>

#include "kfleet/testing/temp_dir.hpp"
#include "plane.hpp"

namespace kfleet::core {
namespace {

namespace asio = boost::asio;

constexpr TimeMs kTtl = 30'000;

Config config() {
  Config cfg;
  cfg.lease_ttl_ms = kTtl;
  cfg.tick_ms = 1;
  cfg.lost_agent_retire_ms = 0;
  return cfg;
}

// A second connection to the store's file: PRAGMA data_version changes exactly when another
// connection (the store's) commits a change.
class Watcher {
 public:
  explicit Watcher(const std::string& file) {
    if (sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
      throw std::runtime_error("cannot open " + file);
  }
  ~Watcher() { sqlite3_close(db_); }
  std::int64_t version() {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db_, "PRAGMA data_version", -1, &st, nullptr);
    std::int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
  }

 private:
  sqlite3* db_ = nullptr;
};

struct Plane : test::Plane {
  explicit Plane(const std::string& db = ":memory:", Config cfg = config())
      : test::Plane(std::move(cfg), nullptr, db) {
    clock->set_ms(1'000'000);
  }

  std::int64_t enrol(const std::string& name, const std::string& gpu = "L4") {
    return enrol_agent(name, gpu, /*simulated=*/true).agent_id;
  }

  std::int64_t submit(const std::string& name, const std::string& gpu = "L4") {
    return test::Plane::submit("name: " + name + "\ntarget: {gpu: " + gpu +
                               "}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n");
  }

  void run_for(std::chrono::milliseconds d) {
    io.restart();
    io.run_for(d);
  }
  void run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) run_for(std::chrono::milliseconds(2));
    ASSERT_TRUE(done());
  }

  // Opens a long poll for each agent; `got[i]` is set when agent i's poll is answered.
  struct Polls {
    std::vector<std::optional<Result<std::optional<LeaseOffer>>>> got;
    std::size_t answered() const {
      std::size_t n = 0;
      for (const auto& g : got) n += g.has_value();
      return n;
    }
  };
  std::shared_ptr<Polls> poll(const std::vector<std::int64_t>& agents, TimeMs wait_ms) {
    auto polls = std::make_shared<Polls>();
    polls->got.resize(agents.size());
    for (std::size_t i = 0; i < agents.size(); ++i)
      asio::co_spawn(
          io,
          [this, polls, i, a = agents[i], wait_ms]() -> asio::awaitable<void> {
            auto r = co_await cp->wait_for_lease(a, wait_ms);
            polls->got[i] = std::move(r);
          },
          asio::detached);
    run_for(std::chrono::milliseconds(5));
    return polls;
  }
  // One poll that returns at once (wait 0): a heartbeat by long poll.
  Result<std::optional<LeaseOffer>> poll_now(std::int64_t agent) {
    auto p = poll({agent}, 0);
    run_until([&] { return p->answered() == 1; });
    return std::move(*p->got[0]);
  }
  store::AgentRecord live_view(std::int64_t agent) {
    auto a = *st->get_agent(agent);
    cp->overlay_live(a);
    return a;
  }
};

TEST(Liveness, AHeartbeatOfAnUnchangedAgentWritesNothingToTheStore) {
  testing::TempDir dir("kfleet-liveness");
  const std::string db = (dir / "kfleet.db").string();
  Plane p(db);
  const auto a = p.enrol("a");
  p.cp->start();
  const TimeMs enrolled_ms = p.clock->now_ms();
  Watcher w(db);
  const std::int64_t before = w.version();
  // Ten minutes of an idle agent: a heartbeat every 5 s and a long poll after each.
  for (int i = 0; i < 120; ++i) {
    p.clock->advance_ms(5'000);
    auto hb = p.cp->heartbeat(a, 0, 0);
    ASSERT_TRUE(hb.ok()) << hb.error().message;
    EXPECT_TRUE(hb->lease_valid);
    auto polled = p.poll_now(a);
    ASSERT_TRUE(polled.ok()) << polled.error().message;
    EXPECT_FALSE(polled->has_value());
  }
  EXPECT_EQ(w.version(), before) << "a heartbeat of an unchanged agent wrote to the store";
  EXPECT_EQ(p.st->get_agent(a)->last_seen_ms, enrolled_ms) << "its row was touched";
  EXPECT_EQ(p.st->get_agent(a)->state, store::AgentState::idle);
  // The leader knows when it last heard from it, and the API shows that.
  EXPECT_EQ(p.live_view(a).last_seen_ms, p.clock->now_ms());
  EXPECT_EQ(p.cp->beats_heard(), 240);
  EXPECT_EQ(p.cp->beats_written(), 0);

  // What the store must know is written when it happens: silent past the TTL, lost ...
  p.clock->advance_ms(kTtl + 1);
  p.run_until([&] { return p.st->get_agent(a)->state == store::AgentState::lost; });
  const std::int64_t lost = w.version();
  EXPECT_NE(lost, before);
  // ... and back, idle again, at its next heartbeat.
  ASSERT_TRUE(p.cp->heartbeat(a, 0, 0).ok());
  EXPECT_EQ(p.st->get_agent(a)->state, store::AgentState::idle);
  EXPECT_NE(w.version(), lost);
  EXPECT_EQ(p.cp->beats_written(), 1);
}

TEST(Liveness, ALeaseIsRenewedInMemoryAndWrittenOnlyWhenItsStoredExpiryFallsHalfATtlBehind) {
  testing::TempDir dir("kfleet-liveness");
  const std::string db = (dir / "kfleet.db").string();
  Plane p(db);
  const auto a = p.enrol("a");
  p.submit("j");
  p.cp->start();
  auto polls = p.poll({a}, 5'000);
  p.run_until([&] { return polls->answered() == 1; });
  auto& offer = *polls->got[0];
  ASSERT_TRUE(offer.ok() && offer->has_value());
  const store::Lease lease = (*offer)->lease;
  Watcher w(db);
  std::vector<int> wrote;  // the beats (1-based) that wrote
  for (int beat = 1; beat <= 24; ++beat) {  // two minutes at one beat every 5 s
    p.clock->advance_ms(5'000);
    const std::int64_t v = w.version();
    auto hb = p.cp->heartbeat(a, lease.run_id, lease.fencing_token);
    ASSERT_TRUE(hb.ok()) << hb.error().message;
    ASSERT_TRUE(hb->lease_valid) << "beat " << beat;
    EXPECT_EQ(hb->lease_expires_ms, p.clock->now_ms() + kTtl);
    if (w.version() != v) wrote.push_back(beat);
    // The store's expiry is never more than half a TTL before the leader's.
    const auto run = p.st->get_run(lease.run_id);
    EXPECT_GE(run->lease_expires_ms, p.clock->now_ms() + kTtl / 2) << "beat " << beat;
    p.run_for(std::chrono::milliseconds(2));  // ticks: nothing expires
  }
  // Half a TTL is three beats: the 3rd, 6th, ... beat wrote, the others wrote nothing.
  EXPECT_EQ(wrote, (std::vector<int>{3, 6, 9, 12, 15, 18, 21, 24}));
  EXPECT_EQ(p.st->get_run(lease.run_id)->outcome, RunOutcome::running);
  // The run's view shows the lease as the leader holds it.
  auto run = *p.st->get_run(lease.run_id);
  p.cp->overlay_live(run);
  EXPECT_EQ(run.lease_expires_ms, p.clock->now_ms() + kTtl);

  // Silent past its lease: the expiry is written when it happens.
  p.clock->advance_ms(kTtl + 1);
  p.run_until([&] { return p.st->get_run(lease.run_id)->outcome == RunOutcome::lost; });
  EXPECT_EQ(p.st->get_agent(a)->state, store::AgentState::lost);
  auto late = p.cp->heartbeat(a, lease.run_id, lease.fencing_token);
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE(late->lease_valid);
}

TEST(Liveness, AnAgentAskingForWorkWithoutItsRunGetsTheJobBackUnderANewToken) {
  // The lease's answer never reached the agent (cut off, or past the agent's timeout): it asks
  // for work again. Its run ends as lost at once and the job is leased anew, to it, with a new
  // run and fencing token, not held until the TTL runs out while every poll is refused.
  Plane p;
  const auto a = p.enrol("a");
  const auto job = p.submit("j");
  p.cp->start();
  auto first = p.poll({a}, 5'000);
  p.run_until([&] { return first->answered() == 1; });
  ASSERT_TRUE(first->got[0]->ok() && first->got[0]->value().has_value());
  const LeaseOffer lost = *first->got[0]->value();
  ASSERT_EQ(lost.lease.job_id, job);

  auto again = p.poll({a}, 5'000);
  p.run_until([&] { return again->answered() == 1; });
  ASSERT_TRUE(again->got[0]->ok()) << again->got[0]->error().message;
  ASSERT_TRUE(again->got[0]->value().has_value());
  const LeaseOffer next = *again->got[0]->value();
  EXPECT_EQ(next.lease.job_id, job);
  EXPECT_NE(next.lease.run_id, lost.lease.run_id);
  EXPECT_NE(next.lease.fencing_token, lost.lease.fencing_token);
  EXPECT_EQ(next.attempt, lost.attempt);  // the lost run never started: its attempt is not counted
  EXPECT_EQ(p.st->get_run(lost.lease.run_id)->outcome, RunOutcome::lost);
  bool said_why = false;
  for (const auto& e : p.st->job_events(job, 0, 100))
    if (e.type == event_type::lease_lost)
      said_why = e.data.value("reason", std::string()).find("the lease never reached it") != std::string::npos;
  EXPECT_TRUE(said_why);
  // Nothing under the old token is taken any more; the new run is the agent's.
  auto hb = p.cp->heartbeat(a, lost.lease.run_id, lost.lease.fencing_token);
  ASSERT_TRUE(hb.ok());
  EXPECT_FALSE(hb->lease_valid);
  EXPECT_FALSE(p.cp->finish(a, lost.lease.run_id, lost.lease.fencing_token, Verdict{}).ok());
  auto live = p.cp->heartbeat(a, next.lease.run_id, next.lease.fencing_token);
  ASSERT_TRUE(live.ok());
  EXPECT_TRUE(live->lease_valid);
  EXPECT_EQ(p.st->get_agent(a)->state, store::AgentState::busy);
}

TEST(Liveness, ARestartedLeaderGivesEveryAgentATtlToSpeakAgain) {
  testing::TempDir dir("kfleet-liveness");
  const std::string db = (dir / "kfleet.db").string();
  std::int64_t alive = 0, silent = 0;
  {
    Plane first(db);
    alive = first.enrol("alive");
    silent = first.enrol("silent");
    first.cp->start();
  }
  // The next kfleetd starts long after the agents' rows were last written: what the last one
  // heard died with it, so neither is lost yet.
  Plane p(db);
  p.clock->advance_ms(10 * kTtl);
  p.cp->start();
  p.run_for(std::chrono::milliseconds(5));
  EXPECT_EQ(p.st->get_agent(alive)->state, store::AgentState::idle);
  EXPECT_EQ(p.st->get_agent(silent)->state, store::AgentState::idle);
  p.clock->advance_ms(kTtl / 2);
  ASSERT_TRUE(p.cp->heartbeat(alive, 0, 0).ok());
  p.clock->advance_ms(kTtl / 2 + 1);
  p.run_until([&] { return p.st->get_agent(silent)->state == store::AgentState::lost; });
  EXPECT_EQ(p.st->get_agent(alive)->state, store::AgentState::idle);
}

TEST(Liveness, ANewJobWakesOneWaitingAgentNotAll) {
  Plane p;
  std::vector<std::int64_t> agents;
  for (int i = 0; i < 50; ++i) agents.push_back(p.enrol("a" + std::to_string(i)));
  p.cp->start();
  auto polls = p.poll(agents, 60'000);
  p.run_until([&] { return p.cp->waiting_agents() == agents.size(); });
  p.submit("one");
  p.run_until([&] { return polls->answered() == 1; });
  p.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(polls->answered(), 1u) << "a wake-up reached more than the agent given the job";
  EXPECT_EQ(p.cp->waiting_agents(), agents.size() - 1);
  for (const auto& g : polls->got)
    if (g) {
      EXPECT_TRUE(g->ok() && g->value().has_value());
    }
  p.cp->stop();  // the others' polls end with the control plane
  p.run_until([&] { return polls->answered() == agents.size(); });
}

// With a compile agent in the fleet every job builds on one first, the job a submit plans at
// once as much as those a pass plans: a waiting GPU agent that could run it is not woken.
TEST(Liveness, ANewJobBuildsOnAWaitingCompileAgentFirst) {
  Plane p;
  const auto gpu = p.enrol("gpu");
  EnrolRequest er{"builder", "us-east-1", "compile", "static", "", {}, {}};
  GpuInfo none;  // what a compile agent reports: one entry whose class no job targets
  none.gpu_class = "compile";
  none.vendor = "none";
  er.gpus = {none};
  auto b = p.cp->enrol(er);
  ASSERT_TRUE(b.ok()) << b.error().message;
  const auto builder = b->agent_id;
  p.cp->start();
  auto polls = p.poll({gpu, builder}, 60'000);
  p.run_until([&] { return p.cp->waiting_agents() == 2; });
  p.submit("built-first");
  p.run_until([&] { return polls->answered() == 1; });
  p.run_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(polls->got[0].has_value()) << "the GPU agent was offered a job not yet built";
  ASSERT_TRUE(polls->got[1].has_value() && polls->got[1]->ok() && polls->got[1]->value().has_value());
  EXPECT_EQ(polls->got[1]->value()->phase, "compile");
  p.cp->stop();
  p.run_until([&] { return polls->answered() == 2; });
}

TEST(Liveness, AnIdleAgentsPollCostsAPassOnlyWhenItCouldRunAQueuedJob) {
  Plane p;
  std::vector<std::int64_t> l4;
  for (int i = 0; i < 20; ++i) l4.push_back(p.enrol("l4-" + std::to_string(i)));
  for (int i = 0; i < 30; ++i) p.submit("h100-" + std::to_string(i), "H100");
  p.cp->start();
  p.run_for(std::chrono::milliseconds(20));  // the first passes: every job told why it waits
  const auto passes = p.cp->passes();
  for (int round = 0; round < 3; ++round) {
    auto polls = p.poll(l4, 0);
    p.run_until([&] { return polls->answered() == l4.size(); });
  }
  p.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(p.cp->passes(), passes) << "L4 agents' polls planned an H100 queue";
  // An agent that could run a queued job is planned for at once.
  const auto h100 = p.enrol("h100", "H100");
  p.run_for(std::chrono::milliseconds(20));
  const auto before_poll = p.cp->passes();
  auto polls = p.poll({h100}, 5'000);
  p.run_until([&] { return polls->answered() == 1; });
  ASSERT_TRUE(polls->got[0]->ok());
  EXPECT_TRUE(polls->got[0]->value().has_value()) << "the H100 agent was given no job";
  EXPECT_GT(p.cp->passes(), before_poll);
}

// The tick's sweep for silent agents walks a slice of a large fleet, not all of it: a walk over
// 10,000 agents held the API thread 1.6-1.9 ms each 200 ms tick, and a user's page waited for it.
// A small fleet is swept whole each time (one tick notices a silence, as before); a large one in
// slices of at least `at_once`, each agent exactly once per round, whatever leaves in between.
TEST(Liveness, ALargeFleetIsSweptASliceATickEachAgentOnceARound) {
  LiveFleet fleet;
  auto add = [&](std::int64_t id) {
    store::AgentRecord a;
    a.id = id;
    a.name = "a" + std::to_string(id);
    fleet.add(a, 0);
  };
  for (std::int64_t id = 1; id <= 100; ++id) add(id);
  std::vector<std::int64_t> seen;
  auto see = [&](std::int64_t id, const LiveFleet::Agent&) { seen.push_back(id); };
  EXPECT_EQ(fleet.sweep(0, 2000, 5, see), 0);  // small: all at once, and the next starts over
  EXPECT_EQ(seen.size(), 100u);

  for (std::int64_t id = 101; id <= 10'000; ++id) add(id);
  std::map<std::int64_t, int> times;
  std::int64_t from = 0;
  int slices = 0;
  do {
    seen.clear();
    from = fleet.sweep(from, 2000, 5, see);
    ++slices;
    EXPECT_LE(seen.size(), 2001u) << "slice " << slices;
    for (auto id : seen) ++times[id];
    if (slices == 2) fleet.remove(from);  // the next slice's first agent retires meanwhile
  } while (from != 0 && slices < 10);
  EXPECT_EQ(slices, 5);
  EXPECT_EQ(times.size(), 9'999u);  // every agent but the one that left
  for (const auto& [id, n] : times) ASSERT_EQ(n, 1) << "agent " << id;
}

}  // namespace
}  // namespace kfleet::core
