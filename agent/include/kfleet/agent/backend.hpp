#pragma once
// A GPU backend runs a job's stages on this host: cuda (nvcc, ptxas, NVML), hip (hipcc or
// clang-19, AMDGPU metadata) or simulated (tests and the no-GPU demo; every result it makes is
// marked simulated). Backends never link a GPU runtime into the agent: they run compilers and
// the harness as child processes, so a kernel that crashes or hangs only kills its child.
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/jobspec.hpp"
#include "kfleet/common/model.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::backends {
struct SandboxPolicy;  // agent/backends/common/sandbox.hpp
}

namespace kfleet::agent {

// Where a stage reports what it sees; the pipeline numbers and uploads it.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void emit(const std::string& type, nlohmann::json data) = 0;
  void log(const std::string& stage, const std::string& text) {
    emit("log", {{"stage", stage}, {"text", text}});
  }
};

// Set by the pipeline when the run must stop (cancelled, lease lost, agent shutting down).
// Long stages poll it and kill their children.
struct StopFlag {
  std::atomic<bool> stop{false};
  bool requested() const { return stop.load(); }
};

// The baseline a job's performance is compared with, resolved by kfleetd at lease time.
struct Comparison {
  std::string kind;                   // parent | job | value | baseline | reference | ""
  std::string label;                  // "parent fa-s512-v3/baseline (run 12)", "torch.compile"
  std::string note;                   // with kind "": why there is nothing to compare with
  double median_us = 0;
  std::vector<double> samples_us;     // when known: enables a CI on the ratio
  bool simulated = false;
  // Interleaved (benchmark.interleave): the reference job's sources and spec, so this agent can
  // build it and alternate it with the candidate. interleave_error says why that is impossible.
  bool interleave = false;
  std::string bundle_hash;
  std::optional<JobSpec> spec;
  std::string interleave_error;
  static Comparison from_json(const nlohmann::json& j);
};

struct StageContext {
  const JobSpec& spec;
  std::string bundle_dir;             // the job's sources, unpacked
  std::string work_dir;               // scratch for this run (build outputs, logs)
  GpuInfo gpu;
  Comparison compare;
  EventSink& sink;
  const StopFlag& stop;
  std::string bundle_hash;            // with attempt: seeds anything random (the simulator)
  int attempt = 1;
  std::string baseline_bundle_dir;    // the reference's sources, unpacked, when interleaved
  // The run's own dir, all a job's processes may write (their sandbox's writable dir); holds
  // bundle_dir and work_dir. "" = work_dir.
  std::string run_dir;
};

struct StageResult {
  bool ok = false;
  std::string reason;                 // one line when !ok: "register count 144 > budget 128"
  bool infra_error = false;           // the stage could not run for a reason of the job's
                                      // (a target no toolchain builds): error, not a rejection
  nlohmann::json data = nlohmann::json::object();
  // The fleet's failure, not the job's (a compiler or driver missing on this agent, a full
  // disk): never a verdict. The pipeline retries the stage, then gives the run back so that
  // kfleetd requeues it (agent/README.md, "Whose failure is it").
  bool fleet_error = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual bool simulated() const = 0;
  // False when the job's processes run without the sandbox (--unsandboxed): every verdict
  // then says "unsandboxed". The simulated backend runs no job code.
  virtual bool sandboxed() const { return true; }
  // The GPU's settings that belong to the fleet, not the job (power limit, compute mode,
  // application clocks), as a flat object; nullopt where this backend cannot read them. Read
  // before and after each GPU stage: a change fails the run at the `integrity` gate.
  virtual std::optional<nlohmann::json> gpu_settings() { return std::nullopt; }
  virtual Result<std::vector<GpuInfo>> discover() = 0;
  // Work worth doing once the GPU is known and before the first lease (the harness objects for
  // this arch): run on a background thread, so a job arriving meanwhile is not held up by more
  // than what it shares with it. `log` reports what was done.
  virtual void prepare(const std::function<void(const std::string&)>& log) { (void)log; }
  virtual StageResult build(StageContext& c) = 0;
  virtual StageResult resources(StageContext& c) = 0;
  virtual StageResult correctness(StageContext& c) = 0;
  // Times the kernel (and, for interleaved comparisons, the baseline) and fills
  // data with bench.result fields: median_us, mean_us, stdev_us, min_us, p10_us, p90_us,
  // samples_us, and the perf verdict fields when a comparison was made.
  virtual StageResult benchmark(StageContext& c) = 0;
  virtual StageResult profile(StageContext& c) = 0;
};
using BackendPtr = std::unique_ptr<Backend>;

struct SimulatedGpuOptions {
  std::string gpu_class = "L4";
  std::string arch = "sm_89";
  unsigned gpus = 1;               // GPUs the simulated host has (a simulated 8-GPU host: 8)
  std::string host_id = "sim";     // makes the simulated UUIDs distinct per host
};
BackendPtr make_simulated_backend(const SimulatedGpuOptions& o);

// Real GPU backends (agent/backends/). Empty fields are discovered or looked up: the harness
// sources from $KFLEET_HARNESS_DIR or the source tree, compilers from the usual install paths,
// the GPU class and arch from NVML / sysfs.
struct CudaBackendOptions {
  std::string harness_dir;
  std::string nvcc;
  std::string gpu_class, arch;     // override discovery ("L4", "sm_89")
  unsigned device = 0;
  std::string cache_dir;           // build cache; "" = <work_dir>/../build-cache
  bool require_exclusive = true;   // refuse to benchmark beside another compute process
  double busy_wait_s = 60;         // ... after waiting this long for it to finish
  bool link_harness = true;        // false: compile the job only (a compile agent)
  double throttle_pct = -1;        // harness --throttle-pct for benchmarks; < 0: its default
  // The sandbox every job process runs in (probe_sandbox); without one no job process starts.
  std::shared_ptr<const backends::SandboxPolicy> sandbox;
  // The Python that records triton and torch kernels; "" = $KFLEET_PYTHON, else python3.
  std::string python;
  // The problem library a job's kernel.problem is resolved in; "" = $KFLEET_PROBLEMS_DIR, else
  // the source tree's kernels/problems.
  std::string problems_dir;
  // How long recording one of kfleet's PyTorch references may take (torch.compile's
  // max-autotune tunes for minutes); past it the comparison is a note, never the job's failure.
  int reference_timeout_s = 1800;
};
BackendPtr make_cuda_backend(const CudaBackendOptions& o);

struct HipBackendOptions {
  std::string harness_dir;
  std::string hipcc, clang;        // hipcc when ROCm is installed, else clang-19
  std::string gpu_class, arch;     // override discovery ("gfx1151")
  unsigned device = 0;
  std::string cache_dir;
  bool require_exclusive = true;   // refuse to benchmark beside another compute process (KFD)
  double busy_wait_s = 60;         // ... after waiting this long for it to finish
  bool link_harness = true;        // false: compile the job only (a compile agent)
  double throttle_pct = -1;        // harness --throttle-pct for benchmarks; < 0: its default
  std::shared_ptr<const backends::SandboxPolicy> sandbox;  // as CudaBackendOptions::sandbox
  std::string problems_dir;        // as CudaBackendOptions::problems_dir
};
BackendPtr make_hip_backend(const HipBackendOptions& o);

// A compile agent (no GPU): fetch, build and the resources gate for real, with nvcc for a CUDA
// job's arch and hipcc or clang-19 for a HIP one; then kfleetd hands the job to a GPU agent.
// Its correctness, benchmark and profile stages refuse to run. The arch comes with the lease
// (the StageContext's gpu.arch) or, failing that, from the job's target (compile_arch_for).
struct CompileBackendOptions {
  std::string harness_dir;
  std::string cache_dir;           // build cache; "" = beside the run dirs
  std::shared_ptr<const backends::SandboxPolicy> sandbox;  // as CudaBackendOptions::sandbox
  std::string problems_dir;        // as CudaBackendOptions::problems_dir
};
BackendPtr make_compile_backend(const CompileBackendOptions& o);
// The arch a GPU class or arch compiles for ("L4" -> "sm_89", "gfx1151" -> "gfx1151"); "" if
// unknown.
std::string compile_arch_for(const std::string& gpu);

}  // namespace kfleet::agent
