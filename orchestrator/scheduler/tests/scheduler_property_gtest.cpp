// Random snapshots (seeded, so failures reproduce): plan() never breaks its invariants.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "scheduler_fixtures.hpp"

namespace kfleet::sched {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace)

Snapshot random_snapshot(std::mt19937& rng) {
  const std::vector<GpuInfo> gpus = {gpu("L4", "sm_89"), gpu("H100", "sm_90a"),
                                     gpu("gfx1151", "gfx1151")};
  const std::vector<std::string> wanted = {"L4", "sm_89", "H100", "sm_90", "gfx1151", "A100"};
  const std::vector<std::string> regions = {"us-east-1", "us-east-1a", "eu-west-1b", "us-west-2"};
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };

  Snapshot s;
  s.now = kNow;
  const std::size_t agents = pick(8);
  for (std::size_t i = 0; i < agents; ++i)
    s.agents.push_back(agent(static_cast<std::int64_t>(i + 1), regions[pick(regions.size())],
                             gpus[pick(gpus.size())], pick(3) != 0));
  const std::size_t jobs = pick(12);
  for (std::size_t i = 0; i < jobs; ++i) {
    std::vector<std::string> rs;
    for (std::size_t k = pick(3); k > 0; --k) rs.push_back(regions[pick(regions.size())]);
    s.queue.push_back(job(static_cast<std::int64_t>(100 + i), wanted[pick(wanted.size())], rs,
                          static_cast<int>(pick(3))));
  }
  std::shuffle(s.queue.begin(), s.queue.end(), rng);  // plan() must not rely on queue order
  if (pick(2)) s.provisioner = sim_cloud(static_cast<int>(pick(4)), {"us-east-1", "us-west-2"});
  return s;
}

TEST(PlanProperty, NeverDoubleAssignsOrMismatches) {
  std::mt19937 rng(20240611);
  for (int round = 0; round < 2000; ++round) {
    const Snapshot s = random_snapshot(rng);
    const Plan p = plan(s);
    std::map<std::int64_t, const AgentSlot*> agents;
    for (const auto& a : s.agents) agents[a.id] = &a;
    std::map<std::int64_t, const PendingJob*> jobs;
    for (const auto& j : s.queue) jobs[j.id] = &j;

    std::set<std::int64_t> used_agents, decided_jobs;
    for (const auto& a : p.assign) {
      ASSERT_TRUE(used_agents.insert(a.agent_id).second) << "agent twice, round " << round;
      ASSERT_TRUE(decided_jobs.insert(a.job_id).second) << "round " << round;
      const AgentSlot* slot = agents.at(a.agent_id);
      ASSERT_TRUE(slot->idle) << "round " << round;
      ASSERT_TRUE(gpu_matches(jobs.at(a.job_id)->gpu, slot->gpus[0])) << "round " << round;
      const auto& want = jobs.at(a.job_id)->regions;
      ASSERT_TRUE(want.empty() || std::any_of(want.begin(), want.end(), [&](const std::string& r) {
                    return region_matches(r, slot->region);
                  })) << "agent outside the job's regions, round " << round;
    }
    int requests = 0;
    for (const auto& r : p.provision) {
      ASSERT_TRUE(decided_jobs.insert(r.job_id).second) << "round " << round;
      ++requests;
    }
    for (const auto& w : p.wait) ASSERT_TRUE(decided_jobs.insert(w.job_id).second);
    // Every job gets exactly one decision.
    EXPECT_EQ(decided_jobs.size(), jobs.size()) << "round " << round;
    if (s.provisioner) EXPECT_LE(requests, s.provisioner->capacity_budget);
    else EXPECT_EQ(requests, 0);
  }
}

// Each job, in the plan's order (priority, then id), gets the agent a scan of every agent would
// give it: of the idle ones not given to a job before it that run it, the one in the job's
// earliest region, then the lowest id; and a job given none had none such. What the plan's
// per-kind candidate lists must keep of the scan they replace.
TEST(PlanProperty, EachJobGetsTheBestFreeAgentAScanWouldFind) {
  std::mt19937 rng(31337);
  for (int round = 0; round < 2000; ++round) {
    Snapshot s = random_snapshot(rng);
    // Agents in the order a control plane keeps them: by id.
    std::sort(s.agents.begin(), s.agents.end(),
              [](const AgentSlot& a, const AgentSlot& b) { return a.id < b.id; });
    const Plan p = plan(s);
    std::map<std::int64_t, std::int64_t> given;  // job -> agent
    for (const auto& a : p.assign) given[a.job_id] = a.agent_id;
    std::vector<const PendingJob*> order;
    for (const auto& j : s.queue) order.push_back(&j);
    std::sort(order.begin(), order.end(), [](const PendingJob* a, const PendingJob* b) {
      return a->priority != b->priority ? a->priority > b->priority : a->id < b->id;
    });
    std::set<std::int64_t> taken;
    for (const PendingJob* j : order) {
      const AgentSlot* best = nullptr;
      std::size_t best_rank = 0;
      for (const auto& a : s.agents) {
        if (!a.idle || taken.count(a.id) || !could_run(a, *j)) continue;
        std::size_t rank = 1;
        if (!j->regions.empty())
          for (rank = 1; rank <= j->regions.size(); ++rank)
            if (region_matches(j->regions[rank - 1], a.region)) break;
        if (!best || rank < best_rank) best = &a, best_rank = rank;
      }
      auto g = given.find(j->id);
      if (!best) {
        EXPECT_EQ(g, given.end()) << "job " << j->id << " given an agent no scan finds, round " << round;
        continue;
      }
      ASSERT_NE(g, given.end()) << "job " << j->id << " left waiting beside idle agent "
                                << best->id << ", round " << round;
      EXPECT_EQ(g->second, best->id) << "job " << j->id << ", round " << round;
      taken.insert(g->second);
    }
  }
}

// The same plan from the agents held elsewhere (Snapshot::fleet) as from the snapshot's own.
TEST(PlanProperty, AFleetHeldElsewherePlansAsTheSnapshotsOwn) {
  std::mt19937 rng(99);
  for (int round = 0; round < 300; ++round) {
    Snapshot s = random_snapshot(rng);
    const Plan own = plan(s);
    std::vector<AgentSlot> held = std::move(s.agents);
    s.agents.clear();
    s.fleet = &held;
    const Plan ref = plan(s);
    ASSERT_EQ(own.assign.size(), ref.assign.size()) << "round " << round;
    for (std::size_t i = 0; i < own.assign.size(); ++i) {
      EXPECT_EQ(own.assign[i].job_id, ref.assign[i].job_id);
      EXPECT_EQ(own.assign[i].agent_id, ref.assign[i].agent_id);
    }
    ASSERT_EQ(own.wait.size(), ref.wait.size()) << "round " << round;
    for (std::size_t i = 0; i < own.wait.size(); ++i) EXPECT_EQ(own.wait[i].reason, ref.wait[i].reason);
  }
}

TEST(PlanProperty, IsDeterministic) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    const Snapshot s = random_snapshot(rng);
    const Plan a = plan(s), b = plan(s);
    ASSERT_EQ(a.assign.size(), b.assign.size());
    for (std::size_t i = 0; i < a.assign.size(); ++i) {
      EXPECT_EQ(a.assign[i].job_id, b.assign[i].job_id);
      EXPECT_EQ(a.assign[i].agent_id, b.assign[i].agent_id);
    }
    ASSERT_EQ(a.wait.size(), b.wait.size());
    for (std::size_t i = 0; i < a.wait.size(); ++i) EXPECT_EQ(a.wait[i].reason, b.wait[i].reason);
  }
}

}  // namespace
}  // namespace kfleet::sched
