#pragma once
// A fake EC2 API on 127.0.0.1:<port 0> for the real AWS provider: the query protocol in, real
// EC2 XML bodies out, with per-region behaviour (capacity, stockout, unsupported, quota, auth,
// throttled) and per-region instance state, so provisioning outcomes can be checked end to end.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loopback_http.hpp"

namespace kfleet::provision::testing {

enum class RegionBehaviour { capacity, stockout, unsupported, quota, auth, throttled };

struct FakeInstance {
  std::string id;
  std::string region;
  std::string instance_type;
  std::string image_id;
  std::string zone;
  std::string state;  // pending -> running -> terminated
  std::string user_data;
  std::string private_ip;
  std::string volume_id;
  std::map<std::string, std::string> tags;
};

class FakeEc2 {
 public:
  FakeEc2();  // listening before it returns
  ~FakeEc2();
  FakeEc2(const FakeEc2&) = delete;
  FakeEc2& operator=(const FakeEc2&) = delete;

  std::string endpoint() const;  // "http://127.0.0.1:<port>"
  void set_behaviour(const std::string& region, RegionBehaviour b);
  void set_behaviours(const std::map<std::string, RegionBehaviour>& by_region) {
    for (const auto& [region, b] : by_region) set_behaviour(region, b);
  }

  // The next `times` answers to `action` are cut off after their headers (the connection
  // closes mid-answer); the action itself is done, as when a real connection drops.
  void drop_answers(const std::string& action, int times);

  std::vector<FakeInstance> instances(const std::string& region) const;
  int run_instances_calls(const std::string& region) const;
  // Every instance id a TerminateInstances call named, in the order the calls came.
  std::vector<std::string> terminate_requests() const;
  // Actions the fake does not implement, so a test can say what the provider asked for.
  std::vector<std::string> unknown_actions() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::unique_ptr<LoopbackHttpServer> server_;  // after state_: stops before the state goes
};

}  // namespace kfleet::provision::testing
