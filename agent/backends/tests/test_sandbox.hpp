#pragma once
// The job sandbox the backend tests run their job processes in: the real one (bwrap, setpriv,
// a cgroup, the syscall filter), as an agent has it. A host that cannot sandbox fails these
// tests, it does not skip.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/sandbox.hpp"
#include "kfleet/agent/backend.hpp"

inline kfleet::backends::SandboxPolicyPtr test_sandbox(std::vector<std::string> hidden = {}) {
  kfleet::backends::SandboxProbeOptions o;
  o.hidden = std::move(hidden);
  o.seccomp_exec = KFLEET_SECCOMP_EXEC;  // the build's, beside kfleet-agent
  o.defaults.memory_bytes = 1ull << 30;
  o.defaults.max_processes = 64;  // tasks (threads too): ample for nvcc and the stand-in harness
  auto p = kfleet::backends::probe_sandbox(o);
  if (!p) {
    ADD_FAILURE() << "the job sandbox is unavailable on this host: " << p.error().message;
    return nullptr;
  }
  return *p;
}

// The backend tests' own files: kernels/ (jobs' sources), fake_harness/ (a stand-in harness
// that speaks the protocol without a GPU), profiles/ (real ncu captures).
inline const std::filesystem::path kBackendTestsDir =
    std::filesystem::path(KFLEET_BACKEND_TEST_KERNELS).parent_path();

// A CUDA backend for an H200 (sm_90a) on the stand-in harness, caching builds in cache_dir, its
// job processes in `sandbox`; no NVML (CI hosts have none).
inline kfleet::agent::BackendPtr fake_h200_backend(const std::string& cache_dir,
                                                   kfleet::backends::SandboxPolicyPtr sandbox) {
  kfleet::agent::CudaBackendOptions o;
  o.harness_dir = (kBackendTestsDir / "fake_harness").string();
  o.gpu_class = "H200";
  o.arch = "sm_90a";
  o.cache_dir = cache_dir;
  o.require_exclusive = false;
  o.sandbox = std::move(sandbox);
  return kfleet::agent::make_cuda_backend(o);
}

// Builds the job of stage context c, then runs `stage` (&Backend::correctness, ::profile, ...)
// on it: that stage's result (a failed build fails the test and is returned instead).
inline kfleet::agent::StageResult stage_after_build(
    kfleet::agent::Backend& b, kfleet::agent::StageContext& c,
    kfleet::agent::StageResult (kfleet::agent::Backend::*stage)(kfleet::agent::StageContext&)) {
  auto built = b.build(c);
  if (!built.ok) {
    ADD_FAILURE() << "the build failed: " << built.reason;
    return built;
  }
  return (b.*stage)(c);
}

// The stand-in harness's job (kernels/job_kernel.cu's job_tile): one fp16 correctness case
// "mission" of B=1, S=s_dim, on these seeds.
inline kfleet::JobSpec tile_job(std::int64_t s_dim, std::vector<std::uint64_t> seeds, int timeout_s) {
  kfleet::JobSpec s;
  s.name = "t";
  s.timeout_s = timeout_s;
  s.kernel.family = "attention";
  s.kernel.language = "cuda";
  s.kernel.sources = {"job_kernel.cu"};
  s.kernel.entry = "job_tile";
  kfleet::CorrectnessGate g;
  g.dtype = "fp16";
  kfleet::CorrectnessCase c;
  c.name = "mission";
  c.shape.dims = {{"B", 1}, {"S", s_dim}};
  c.seeds = std::move(seeds);
  g.cases = {c};
  s.gates.correctness = g;
  return s;
}
