// How the control plane writes agents' finishes: those that arrive together are one store
// call (on PostgreSQL one transaction and one commit), each caller still gets its own answer;
// and a finish leaves its agent idle, to be refused once retired.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>

#include "kfleet/common/bundle.hpp"
#include "plane.hpp"

namespace kfleet::core {
namespace {

namespace asio = boost::asio;

struct FinishPlane : test::Plane {
  FinishPlane() { clock->set_ms(1'000'000); }

  std::int64_t enrol(const std::string& name) {
    return enrol_agent(name, "L4", /*simulated=*/false).agent_id;
  }

  std::int64_t submit(const std::string& name, bool custom = false) {
    Bundle b;
    b.files.push_back({"k.cu", "// " + name + "\n"});
    const std::string kernel =
        custom ? "kernel:\n  family: custom\n  language: cuda\n  sources: [k.cu]\n"
                 "  steps: {build: \"make\", test: \"./test\", bench: \"./bench --json\"}\n"
               : "kernel: {family: attention, language: cuda, sources: [k.cu]}\n";
    const std::string yaml =
        "name: " + name + "\ncampaign: c\ntarget: {gpu: L4}\n" + kernel +
        "gates:\n  correctness:\n    cases: [{name: mission, shape: {M: 64}, seeds: [0]}]\n"
        "    tolerance: {max_abs: 0.01}\n  performance: {case: mission}\n";
    SubmitRequest sr{yaml, "job.yaml", bundle_to_json(b), true, "carol"};
    auto r = cp->submit(sr);
    if (auto* e = std::get_if<SubmitError>(&r)) {
      ADD_FAILURE() << e->error.message;
      return 0;
    }
    return std::get<SubmitResult>(r).job.id;
  }

  void run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io.restart();
      io.run_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(done());
  }

  // Long-polls of these agents, all open at once: what each was offered (or its error).
  std::vector<Result<std::optional<LeaseOffer>>> poll(const std::vector<std::int64_t>& agents,
                                                      TimeMs wait_ms) {
    std::vector<Result<std::optional<LeaseOffer>>> got(
        agents.size(), make_error(Errc::internal, "no answer"));
    std::size_t answered = 0;
    for (std::size_t i = 0; i < agents.size(); ++i)
      asio::co_spawn(
          io,
          [&, i]() -> asio::awaitable<void> {
            got[i] = co_await cp->wait_for_lease(agents[i], wait_ms);
            ++answered;
          },
          asio::detached);
    run_until([&] { return answered == agents.size(); });
    return got;
  }
};

Verdict passed() {
  Verdict v;
  v.outcome = RunOutcome::passed;
  v.median_us = 100.0;
  return v;
}

TEST(Finish, FinishesThatArriveTogetherAreOneStoreCallAndEachGetsItsOwnAnswer) {
  FinishPlane p;
  std::vector<std::int64_t> agents, jobs;
  for (int i = 0; i < 4; ++i) {
    agents.push_back(p.enrol("a" + std::to_string(i)));
    jobs.push_back(p.submit("c/j" + std::to_string(i), /*custom=*/i == 3));
  }
  p.cp->start();
  auto offers = p.poll(agents, 5'000);
  std::vector<LeaseOffer> leased;
  for (auto& o : offers) {
    ASSERT_TRUE(o.ok() && o->has_value()) << (o.ok() ? "no offer" : o.error().message);
    leased.push_back(**o);
  }
  // Four finishes read in one turn of the loop, one of them with a stale fencing token.
  std::vector<Result<store::RunRecord>> got(4, make_error(Errc::internal, "no answer"));
  std::size_t answered = 0;
  for (std::size_t i = 0; i < 4; ++i)
    asio::co_spawn(
        p.io,
        [&, i]() -> asio::awaitable<void> {
          got[i] = co_await p.cp->finish_gathered(
              agents[i], leased[i].lease.run_id,
              leased[i].lease.fencing_token + (i == 1 ? 1 : 0), passed());
          ++answered;
        },
        asio::detached);
  p.run_until([&] { return answered == 4; });
  EXPECT_EQ(p.cp->finish_batches(), 1);
  EXPECT_EQ(p.cp->finishes_gathered(), 4);
  for (std::size_t i = 0; i < 4; ++i) {
    const auto job = p.st->get_job(leased[i].lease.job_id);
    if (i == 1) {
      ASSERT_FALSE(got[i].ok());
      EXPECT_EQ(got[i].error().code, Errc::conflict);
      EXPECT_EQ(job->state, JobState::leased);
      continue;
    }
    ASSERT_TRUE(got[i].ok()) << got[i].error().message;
    EXPECT_EQ(got[i]->id, leased[i].lease.run_id);
    EXPECT_EQ(job->state, JobState::passed);
    // A custom job's numbers are its own scripts' word, batched or not.
    ASSERT_TRUE(job->verdict);
    EXPECT_EQ(job->verdict->self_reported, job->id == jobs[3]) << job->name;
  }
  // One by one the next turn: a batch each.
  std::size_t more = 0;
  asio::co_spawn(
      p.io,
      [&]() -> asio::awaitable<void> {
        got[1] = co_await p.cp->finish_gathered(agents[1], leased[1].lease.run_id,
                                                leased[1].lease.fencing_token, passed());
        ++more;
      },
      asio::detached);
  p.run_until([&] { return more == 1; });
  ASSERT_TRUE(got[1].ok()) << got[1].error().message;
  EXPECT_EQ(p.cp->finish_batches(), 2);
  EXPECT_EQ(p.cp->finishes_gathered(), 5);
}

TEST(Finish, AnAgentRetiredRightAfterItsFinishIsRefusedOnItsNextPoll) {
  FinishPlane p;
  const auto a = p.enrol("a");
  p.submit("c/j");
  p.cp->start();
  auto offer = p.poll({a}, 5'000).front();
  ASSERT_TRUE(offer.ok() && offer->has_value());
  const TimeMs finished_ms = p.clock->now_ms();
  ASSERT_TRUE(p.cp->finish(a, (*offer)->lease.run_id, (*offer)->lease.fencing_token, passed())
                  .ok());
  EXPECT_EQ(p.st->get_agent(a)->last_seen_ms, finished_ms);
  EXPECT_EQ(p.st->get_agent(a)->state, store::AgentState::idle);
  ASSERT_TRUE(p.poll({a}, 0).front().ok());  // idle again: it may ask for work
  ASSERT_TRUE(p.cp->retire_agent(a, "admin").ok());
  auto refused = p.poll({a}, 0).front();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Errc::forbidden);
}

}  // namespace
}  // namespace kfleet::core
