// An instance-hour cost per job: a run on an instance the provisioner has a price for records
// what the agent's time on it cost; runs on unpriced (static) agents record nothing.
#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include "kfleet/common/bundle.hpp"
#include "kfleet/core/control_plane.hpp"

namespace kfleet::core {
namespace {

class PricedProvisioner final : public provision::Provisioner {
 public:
  std::string name() const override { return "priced"; }
  bool can_grow() const override { return false; }
  int capacity_budget() const override { return 0; }
  std::vector<std::string> regions() const override { return {}; }
  std::vector<std::string> gpu_classes() const override { return {}; }
  void request(const provision::CapacityRequest&, std::function<void(provision::CapacityResult)>) override {}
  void release(const std::string&, std::function<void(Result<void>)>) override {}
  std::optional<double> usd_per_hour(const std::string& id) const override {
    if (id == "i-priced") return 0.8048;  // g6.xlarge on demand, us-east-1
    return std::nullopt;
  }
};

double cost_of(store::Store& st, std::int64_t job) {
  for (const auto& e : st.job_events(job, 0, 100))
    if (e.type == "cost") return e.data["usd"].get<double>();
  return -1;
}

TEST(Cost, ARunOnAPricedInstanceRecordsItsInstanceHourCost) {
  boost::asio::io_context io;
  auto st = store::open_sqlite_store({":memory:"});
  ASSERT_TRUE(st.ok());
  auto clock = std::make_shared<ManualClock>();
  PricedProvisioner prov;
  Config cfg;
  cfg.enrol_token = "e";
  ControlPlane cp(io.get_executor(), **st, clock, prov, cfg);

  auto run_one = [&](const std::string& instance, const std::string& name) {
    EnrolRequest er{"a-" + name, "us-east-1", "cuda", "terraform", instance, {}, {}};
    GpuInfo g;
    g.gpu_class = "L4";
    er.gpus = {g};
    auto agent = cp.enrol(er);
    EXPECT_TRUE(agent.ok());
    Bundle b;
    b.files.push_back({"k.cu", "// k\n"});
    SubmitRequest sr{"name: " + name + "\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, "
                     "sources: [k.cu]}\n", "job.yaml", bundle_to_json(b), true, "test"};
    auto sub = cp.submit(sr);
    EXPECT_TRUE(std::holds_alternative<SubmitResult>(sub));
    const auto job = std::get<SubmitResult>(sub).job.id;
    auto lease = (*st)->grant_lease(job, agent->agent_id, 60'000, clock->now_ms());
    EXPECT_TRUE(lease.ok());
    clock->advance_ms(30 * 60'000);  // the agent held the run for half an hour
    Verdict v;
    v.outcome = RunOutcome::passed;
    EXPECT_TRUE(cp.finish(agent->agent_id, lease->run_id, lease->fencing_token, v).ok());
    return job;
  };
  const auto priced = run_one("i-priced", "priced");
  EXPECT_NEAR(cost_of(**st, priced), 0.4024, 1e-9);
  const auto unpriced = run_one("i-other", "unpriced");
  EXPECT_EQ(cost_of(**st, unpriced), -1);
}

}  // namespace
}  // namespace kfleet::core
