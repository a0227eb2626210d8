#pragma once
// What the CUDA backend tests share: a real nvcc build of a job kernel linked with the stand-in
// harness (tests/fake_harness), a sink that records events, and a fixture with its own dirs.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "common/harness_backend.hpp"
#include "kfleet/agent/backend.hpp"
#include "kfleet/common/event.hpp"
#include "test_sandbox.hpp"

namespace cuda_test {
namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;

inline const std::string kTests = fs::path(KFLEET_BACKEND_TEST_KERNELS).parent_path().string();

class RecordingSink : public EventSink {
 public:
  void emit(const std::string& type, nlohmann::json data) override {
    events.push_back({type, std::move(data)});
  }
  int count(const std::string& type) const {
    int n = 0;
    for (const auto& e : events) n += e.first == type;
    return n;
  }
  std::vector<std::pair<std::string, nlohmann::json>> events;
};

inline JobSpec job(std::int64_t s_dim) {
  JobSpec s;
  s.name = "t";
  s.timeout_s = 120;  // nvcc on a busy 2-core machine takes seconds; the hang case sets its own
  s.kernel.family = "attention";
  s.kernel.language = "cuda";
  s.kernel.sources = {"job_kernel.cu"};
  s.kernel.entry = "job_tile";
  ResourceBudget b;
  b.max_shared_bytes = 49152;
  b.max_spill_bytes = 0;
  s.gates.resources = b;
  CorrectnessGate g;
  g.dtype = "fp16";
  CorrectnessCase c;
  c.name = "mission";
  c.shape.dims = {{"B", 1}, {"S", s_dim}};
  c.seeds = {0, 1};
  g.cases = {c};
  g.tolerance.max_abs = 0.06;
  s.gates.correctness = g;
  return s;
}

struct Fixture {
  fs::path root = fs::temp_directory_path() / ("kfleet_cuda_be_" + std::to_string(::getpid()));
  RecordingSink sink;
  StopFlag stop;
  BackendPtr backend;
  explicit Fixture(const std::string& arch = "sm_89") {
    fs::create_directories(root / "work");
    backend = make(arch);
  }
  BackendPtr make(const std::string& arch) {
    CudaBackendOptions o;
    o.harness_dir = kTests + "/fake_harness";
    o.gpu_class = "L4";
    o.arch = arch;
    o.cache_dir = (root / "cache").string();
    o.require_exclusive = false;  // no NVML on CI hosts
    o.sandbox = test_sandbox();
    return make_cuda_backend(o);
  }
  ~Fixture() { fs::remove_all(root); }
  StageContext ctx(const JobSpec& s) {
    return StageContext{s, kTests + "/kernels", (root / "work").string(), GpuInfo{},
                        Comparison{}, sink, stop};
  }
};


}  // namespace cuda_test
