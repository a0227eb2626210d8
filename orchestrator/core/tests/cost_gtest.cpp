// An instance-hour cost per job: a run on an instance the provisioner has a price for records
// what the agent's time on it cost; runs on unpriced (static) agents record nothing.
#include <gtest/gtest.h>

#include "plane.hpp"

namespace kfleet::core {
namespace {

double cost_of(store::Store& st, std::int64_t job) {
  for (const auto& e : st.job_events(job, 0, 100))
    if (e.type == "cost") return e.data["usd"].get<double>();
  return -1;
}

TEST(Cost, ARunOnAPricedInstanceRecordsItsInstanceHourCost) {
  test::Plane p(Config{}, std::make_unique<test::PricedFleet>([](const std::string& id) {
                  // g6.xlarge on demand, us-east-1
                  return id == "i-priced" ? std::optional<double>(0.8048) : std::nullopt;
                }));

  auto run_one = [&](const std::string& instance, const std::string& name) {
    EnrolRequest er{"a-" + name, "us-east-1", "cuda", "terraform", instance, {}, {}};
    GpuInfo g;
    g.gpu_class = "L4";
    er.gpus = {g};
    auto agent = p.cp->enrol(er);
    EXPECT_TRUE(agent.ok());
    const auto job = p.submit("name: " + name + "\ntarget: {gpu: L4}\nkernel: {family: attention, "
                              "language: cuda, sources: [k.cu]}\n");
    auto lease = p.st->grant_lease(job, agent->agent_id, 60'000, p.clock->now_ms());
    EXPECT_TRUE(lease.ok());
    p.clock->advance_ms(30 * 60'000);  // the agent held the run for half an hour
    Verdict v;
    v.outcome = RunOutcome::passed;
    EXPECT_TRUE(p.cp->finish(agent->agent_id, lease->run_id, lease->fencing_token, v).ok());
    return job;
  };
  const auto priced = run_one("i-priced", "priced");
  EXPECT_NEAR(cost_of(*p.st, priced), 0.4024, 1e-9);
  const auto unpriced = run_one("i-other", "unpriced");
  EXPECT_EQ(cost_of(*p.st, unpriced), -1);
}

}  // namespace
}  // namespace kfleet::core
