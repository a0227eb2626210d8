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
  // nvcc on a busy 2-core machine takes seconds; the hang case sets its own timeout
  JobSpec s = tile_job(s_dim, {0, 1}, 120);
  ResourceBudget b;
  b.max_shared_bytes = 49152;
  b.max_spill_bytes = 0;
  s.gates.resources = b;
  s.gates.correctness->tolerance.max_abs = 0.06;
  return s;
}

// A stage that failed by the kernel's doing (not the fleet's: no infra_error), its reason naming
// each of `says`.
inline void expect_kernels_rejection(const StageResult& r, const std::vector<std::string>& says) {
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.infra_error) << r.reason;
  for (const auto& s : says) EXPECT_NE(r.reason.find(s), std::string::npos) << s << "\n" << r.reason;
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
  // job(s_dim) built, then its correctness stage: that stage's result (a failed build fails the
  // test and is returned instead).
  StageResult correctness_of(std::int64_t s_dim) {
    const auto spec = job(s_dim);
    auto c = ctx(spec);
    return stage_after_build(*backend, c, &kfleet::agent::Backend::correctness);
  }
};


}  // namespace cuda_test
