#pragma once
// The contract every kfleet::store::Store backend passes. A backend's test binary links the
// suite (tests/store_contract*.cpp, the kfleet_store_contract object library) and instantiates
// it with a factory that returns a fresh, empty store per call:
//   INSTANTIATE_TEST_SUITE_P(Sqlite, StoreContract,
//       ::testing::Values(StoreBackend{"memory", [] { return ...; }}), StoreBackendName{});
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "kfleet/store/store.hpp"

namespace kfleet::store::testing {

struct StoreBackend {
  std::string name;
  std::function<StorePtr()> make;  // a fresh, empty store each call
};

inline void PrintTo(const StoreBackend& b, std::ostream* os) { *os << b.name; }

struct StoreBackendName {
  std::string operator()(const ::testing::TestParamInfo<StoreBackend>& i) const {
    return i.param.name;
  }
};

// The fields a get_job reads, side by side with the ones a call handed back
// (store_contract_agent_calls.cpp).
void expect_same_job(const JobRecord& got, const JobRecord& stored);

// A verdict as an agent reports it: `o` with this median, reason and simulated flag; a rejection
// names the performance gate.
inline Verdict a_verdict(RunOutcome o, double median_us, const std::string& reason = "",
                         bool simulated = false) {
  Verdict v;
  v.outcome = o;
  v.reason = reason;
  v.gate = o == RunOutcome::rejected ? "performance" : "";
  v.median_us = median_us;
  v.simulated = simulated;
  return v;
}

class StoreContract : public ::testing::TestWithParam<StoreBackend> {
 public:
  // set_job_states when the database fails in the middle of a batch. `refuse_boom` makes the
  // backend's database raise "injected failure" on any change of a job to the reason "boom" (a
  // trigger); `mend` removes that. Checks that every change of a batch with a "boom" change in
  // the middle gets that error, that none of them is written (state, reason, events), and that
  // the store works after. Each backend's test binary calls it with its own trigger SQL.
  static void check_a_failing_batch_writes_nothing(Store& s,
                                                   const std::function<void()>& refuse_boom,
                                                   const std::function<void()>& mend);

 protected:
  void SetUp() override {
    store_ = GetParam().make();
    ASSERT_NE(store_, nullptr) << "the backend factory returned no store";
  }

  Store& store() { return *store_; }

  // A minimal valid job; tweak the returned value before create_job.
  static NewJob job(const std::string& name, int priority = 0, int max_attempts = 3);
  static NewAgent agent(const std::string& name, bool simulated_gpu = false);
  JobRecord create(const std::string& name, int priority = 0, int max_attempts = 3);
  // A job submitted by token tok-1 as parent + change ("kernel.defines +X=1").
  JobRecord create_child(const std::string& name, std::int64_t parent_job_id);
  AgentRecord enrol(const std::string& name);
  Lease lease(std::int64_t job_id, std::int64_t agent_id, TimeMs ttl = 30'000);
  static Event ev(std::int64_t seq, const std::string& type = "log",
                  nlohmann::json data = nlohmann::json::object());
  static Event stage_started(std::int64_t seq, const std::string& stage);
  // The job.state events of a job, as "state" strings in order.
  std::vector<std::string> state_history(std::int64_t job_id);

  TimeMs now_ = 1'700'000'000'000;
  StorePtr store_;
};

}  // namespace kfleet::store::testing
