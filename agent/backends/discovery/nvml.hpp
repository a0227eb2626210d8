#pragma once
// NVIDIA GPUs through NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): the agent has
// no link dependency on the driver, so one binary runs (and is tested) on hosts without a GPU.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/model.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::backends {

// What the benchmark stage records before and after it runs: throttling and thermal state.
struct GpuSnapshot {
  int sm_clock_mhz = 0, mem_clock_mhz = 0, max_sm_clock_mhz = 0;
  int temperature_c = 0;
  double power_w = 0, power_limit_w = 0;
  nlohmann::json to_json() const;
};

class Nvml {
 public:
  // Loads and initialises NVML; an `unavailable` error (naming the library) when the NVIDIA
  // driver is not installed.
  static Result<std::shared_ptr<Nvml>> load();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  Result<std::vector<GpuInfo>> devices();
  Result<GpuSnapshot> snapshot(unsigned index);
  // The settings that belong to the fleet (power limit, compute mode, application clocks,
  // persistence), as a flat object of what this GPU reports.
  Result<nlohmann::json> settings(unsigned index);
  // Processes other than ours holding a compute context on the device: a benchmark must not
  // share the GPU.
  Result<std::vector<unsigned>> compute_processes(unsigned index);

  struct Api;

 private:
  Nvml() = default;
  void* lib_ = nullptr;
  std::unique_ptr<Api> api_;
};

}  // namespace kfleet::backends
