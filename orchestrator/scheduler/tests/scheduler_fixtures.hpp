#pragma once
// Hand-built snapshots for the scheduler tests.
#include <string>
#include <vector>

#include "kfleet/scheduler/scheduler.hpp"

namespace kfleet::sched::testing {

inline constexpr TimeMs kNow = 1'700'000'000'000;

inline GpuInfo gpu(const std::string& cls, const std::string& arch) {
  GpuInfo g;
  g.gpu_class = cls;
  g.arch = arch;
  return g;
}

inline AgentSlot agent(std::int64_t id, const std::string& region, GpuInfo g, bool idle = true) {
  return AgentSlot{id, region, {std::move(g)}, idle};
}
inline AgentSlot l4(std::int64_t id, const std::string& region, bool idle = true) {
  return agent(id, region, gpu("L4", "sm_89"), idle);
}

inline PendingJob job(std::int64_t id, const std::string& gpu, std::vector<std::string> regions = {},
                      int priority = 0) {
  return PendingJob{id, priority, gpu, std::move(regions)};
}

inline ProvisionerView sim_cloud(int budget, std::vector<std::string> regions) {
  return ProvisionerView{"simulated", true, budget, std::move(regions), {"L4"}};
}

inline store::RegionBlock block(const std::string& region, const std::string& kind, TimeMs until,
                                const std::string& reason = "", const std::string& cls = "") {
  store::RegionBlock b;
  b.provider = "simulated";
  b.region = region;
  b.gpu_class = cls;
  b.kind = kind;
  b.reason = reason;
  b.since_ms = kNow - 1000;
  b.until_ms = until;
  return b;
}

}  // namespace kfleet::sched::testing
