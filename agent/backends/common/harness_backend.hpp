#pragma once
// What the CUDA and HIP backends share: the build cache, the resources gate, running the harness
// child per stage and reading its JSON lines, custom-family steps. Vendors fill in compilers,
// resource reports, GPU state and the profiler.
#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/profile_command.hpp"
#include "common/resources.hpp"
#include "common/rounds.hpp"
#include "common/subprocess.hpp"
#include "common/torch_reference.hpp"
#include "discovery/nvml.hpp"
#include "discovery/python.hpp"
#include "kfleet/agent/backend.hpp"

namespace kfleet::backends {

// A stage that failed for the agent's own reason (no compiler here, the harness missing): never
// the job's verdict (infra_error).
inline agent::StageResult infra(std::string reason) {
  agent::StageResult r;
  r.infra_error = true;
  r.reason = std::move(reason);
  return r;
}

// The agent's own failure (its library lags kfleetd's): retried, never the job's verdict.
inline agent::StageResult fleet(std::string reason) {
  agent::StageResult r = infra(std::move(reason));
  r.fleet_error = true;
  return r;
}

// Replay mode's measuring process (kernels/harness/ABI.md, "Recorded replay"): kfleet's own
// program, built by the agent from the harness's sources alone, with kfleet's flags alone,
// outside every job's sandbox, into <build cache>/measure/<key>/ (harness_measurer.cpp).
struct MeasuringProcess {
  std::string dir, binary, sha256;
  // Its objects, one per harness source in harness_sources() order: also the harness objects a
  // job's recorder is linked with where no entry rename applies.
  std::vector<std::string> objects;
  bool built = false;  // built by this call (else found, checked, and reused)
  double seconds = 0;
};
// The job's objects in a build cache entry (beside the job's binary), whose device code the
// measuring process loads: regular files only.
std::vector<std::string> job_device_code(const std::string& binary);
// The agent takes over a folder a job's processes wrote, once they have all ended: symbolic
// links, special files and files with other hard links are removed (their names are returned,
// comma-separated), the rest is owned by the agent and not writable by others. What is left is
// the job's data, read as data.
// "." when the folder itself is not a folder (a link left in its place): nothing is walked, the
// link is removed, and the caller refuses what it would have read there.
std::string take_job_files(const std::string& dir);
// Creates `path` anew (an existing file or link there is removed first; never followed).
Result<void> write_new_file(const std::string& path, const std::string& text);
// The SHA-256 of a file's content, hex; "" when it cannot be read.
std::string file_sha256(const std::string& path);
// The job asked for in-process timing (kernel.params.timing: in_process).
bool in_process_timing(const JobSpec& spec);
// "" or why in-process timing is refused here (the agent runs as root).
std::string in_process_refusal(const JobSpec& spec);
// The reason a failed recording gives (the recorder's process ended neither 0 nor by timeout or
// stop): the recorder's own refusal line; else how it ended, a signal or an exit status, with
// the sandbox limit it hit and, for a signal, the last line of its stderr. It names the recorder,
// the job's process, never the harness.
std::string recorder_failure(const SubprocessResult& r, const std::vector<nlohmann::json>& said);
// What a verdict of in-process timing says wherever it is shown.
inline constexpr const char* kInProcessNote =
    "in-process timing: the kernel's host code ran in the measuring process";

struct HarnessBackendConfig {
  std::string harness_dir;
  std::string gpu_class, arch;
  unsigned device = 0;
  std::string cache_dir;
  bool require_exclusive = true;
  double busy_wait_s = 60;  // how long a busy GPU is waited for before the benchmark is refused
  // false on compile agents: the job's sources are compiled (the resources gate's input) but
  // not linked with the harness, which only a GPU agent can run.
  bool link_harness = true;
  // The harness's throttle filter for benchmarks (--throttle-pct): a sample whose SM clock is
  // more than this below the best seen is discarded. < 0 keeps the harness default (2 %); 0
  // keeps every sample, for GPUs whose clocks sag under long runs (the H100 at 300+ µs kernels).
  double throttle_pct = -1;
  // Every process started for a job runs in this sandbox; none starts without it.
  SandboxPolicyPtr sandbox;
  // The Python that records triton and torch kernels ("" = $KFLEET_PYTHON, else python3).
  std::string python;
  // The problem library jobs' kernel.problem is resolved in ("" = $KFLEET_PROBLEMS_DIR, else the
  // source tree's kernels/problems).
  std::string problems_dir;
  // How long recording one of kfleet's PyTorch references may take (torch.compile's
  // max-autotune tunes for minutes); its replay has the job's stage timeout, as any replay.
  int reference_timeout_s = 1800;
};

// The build cache's folder: cfg's, else beside the agent's run dirs (<work dir>/build-cache).
std::string build_cache_dir(const std::string& configured, const std::string& work_dir);

class HarnessBackend : public agent::Backend {
 public:
  explicit HarnessBackend(HarnessBackendConfig cfg);
  bool simulated() const override { return false; }
  bool sandboxed() const override;
  agent::StageResult build(agent::StageContext& c) override;
  agent::StageResult resources(agent::StageContext& c) override;
  agent::StageResult correctness(agent::StageContext& c) override;
  agent::StageResult benchmark(agent::StageContext& c) override;
  agent::StageResult profile(agent::StageContext& c) override;
  // Compiles the harness objects for this arch into the build cache, so the first job's build
  // compiles only its own sources.
  void prepare(const std::function<void(const std::string&)>& log) override;

 protected:
  struct Compiler {
    std::string path, version;
  };
  // The compiler for this host, or why there is none.
  virtual Result<Compiler> compiler() = 0;
  // Compiles one job source to an object, with the resource report on stderr.
  virtual std::vector<std::string> compile_argv(const Compiler& cc, const std::string& arch,
                                                const std::vector<std::string>& job_flags,
                                                const std::string& source,
                                                const std::string& object) = 0;
  // Compiles one harness source (kernels/harness/src, cpu) to an object; nullopt when this host
  // can compile job sources but not build a runnable harness (HIP without ROCm).
  virtual std::optional<std::vector<std::string>> harness_compile_argv(
      const Compiler& cc, const std::string& arch, const std::vector<std::string>& flags,
      const std::string& source, const std::string& object) = 0;
  // Links the harness objects and the job's objects into the harness executable.
  virtual std::vector<std::string> link_argv(const Compiler& cc, const std::string& arch,
                                             const std::vector<std::string>& job_flags,
                                             const std::vector<std::string>& objects,
                                             const std::string& output) = 0;
  virtual std::vector<ResourceUsage> parse_resources(const std::string& compile_log,
                                                     const std::string& arch) = 0;
  virtual Result<GpuSnapshot> snapshot() = 0;
  // Pids of other compute processes on our GPU; an empty list when it is ours alone.
  virtual Result<std::vector<unsigned>> other_processes() = 0;
  // The profiler command around the harness command `cmd`, with where it leaves its output
  // under `out_dir`, or an error naming the missing tool. `kernels`: the job's kernels as the
  // compiler named them (mangled), so only their launches are profiled.
  virtual Result<ProfileCommand> profile_argv(const ProfileSpec& p,
                                              const std::vector<std::string>& kernels,
                                              const std::vector<std::string>& cmd,
                                              const std::string& out_dir) = 0;
  // Pins every child that touches the GPU (harness, profiler, custom steps) to cfg_.device:
  // CUDA_VISIBLE_DEVICES=<uuid> or HIP_VISIBLE_DEVICES=<index>, set by discover(). The child
  // then sees only that GPU, as its device 0. NVML and sysfs still use cfg_.device.
  void pin_children(const std::vector<GpuInfo>& gpus, const char* env_name, bool by_uuid);
  unsigned child_device() const { return pin_env_.empty() ? cfg_.device : 0u; }
  // A job process's spec, the start of every process run for a job (compiles, the harness,
  // profilers, custom steps, a recorder): its sandbox with the run dir writable, `readable`
  // (its binary, objects), the job's sources and the harness sources readable, this slot's
  // GPU device nodes when `gpu`, the stage's timeout and stop, and the GPU pin in its
  // environment. Its cwd is the work dir.
  SubprocessSpec job_process(agent::StageContext& c, std::vector<std::string> readable,
                             bool gpu) const;
  // A sandboxed process outside any run (the harness objects prepare() compiles).
  SubprocessSpec sandboxed_process(std::vector<std::string> writable, std::vector<std::string> readable,
                           bool gpu) const;
  std::vector<std::pair<std::string, std::string>> pin_env_;
  // The agent's Python for triton and torch jobs (kernels/harness/PYTHON.md),
  // found once: by discover() as the agent starts, else by the first Python job's build. Its
  // error when no Python runs at all.
  const Result<PythonRuntime>& python_runtime();
  // discover()'s part: the runtime (or why none) into the GPU's extra["python"], each missing
  // piece logged as a setup warning.
  void report_python(std::vector<GpuInfo>& gpus);
  HarnessBackendConfig cfg_;
  // The slot's device node numbers: NVIDIA's /dev/nvidia<minor>, AMD's renderD<minor>.
  unsigned slot_minor_ = 0;
  bool slot_known_ = false;

 private:
  agent::StageResult run_custom_step(agent::StageContext& c, const std::string& stage,
                                     const std::string& command, bool parse_metrics);
  // One harness stage as the job's timing mode says: record then replay (default), or the job's
  // binary in-process; either way the result lines come from a pipe, not stdout.
  Result<SubprocessResult> run_stage(agent::StageContext& c, const std::string& stage,
                                     const std::vector<std::string>& args,
                                     std::vector<nlohmann::json>& messages,
                                     const std::string& binary = "");
  // The measuring process's check of kfleet's GPU reference against its fp64 CPU reference on
  // `case_name` of the job's problem (PROBLEM-ABI.md, "The GPU reference, checked"): no job
  // code, no kernel; its lines go to `messages`.
  Result<SubprocessResult> run_reference_check(agent::StageContext& c, const std::string& case_name,
                                               std::uint64_t seed, std::vector<nlohmann::json>& messages);
  // Who a child is: the job's process (its sandbox writes the run's folder, reads its bundle),
  // kfleet's measuring process (a sandbox that writes nowhere, run from its own read-only
  // folder, reading `readable`: the job's objects, its launch list), or the recorder of one of
  // kfleet's PyTorch references (the job's sandbox, but writing only `folder`, a fresh folder
  // of the agent's, and reading nothing of the job's).
  enum class Child { job, measure, reference };
  Result<SubprocessResult> run_child(agent::StageContext& c, const std::string& stage,
                                     std::vector<std::string> argv,
                                     std::vector<nlohmann::json>& messages, bool result_pipe,
                                     const std::vector<std::string>& readable = {},
                                     Child who = Child::job,
                                     const std::vector<std::pair<std::string, std::string>>& env = {},
                                     const std::string& folder = "");
  std::atomic<int> recordings_{0};
  std::mutex python_mu_;
  std::optional<Result<PythonRuntime>> python_;
  // A Python job's "binary" (harness_binary_ or baseline_binary_ is its launch module's path in
  // the bundle): what its recorder is run with. Set by build, for the candidate and the reference.
  struct PythonJob {
    std::string source, language, entry;
    std::string torch_compile;  // kfleet's compile reference: the mode the recorder wraps it in
    bool reference = false;     // kfleet's PyTorch reference of the job's problem, not the job
  };
  std::map<std::string, PythonJob> python_jobs_;
  agent::StageResult build_one(agent::StageContext& c);
  agent::StageResult build_python(agent::StageContext& c, const Compiler& cc,
                                  const std::filesystem::path& harness_dir);
  Result<Compiler> locked_compiler();
  // The harness's objects for this compiler and arch, from the cache or compiled now (in
  // parallel; a compile another thread has started is waited for, not repeated). `defines`
  // are the entry renames (ABI.md); only the sources that use a macro get it, so a renamed
  // entry recompiles two objects, not ten. nullopt: no runnable harness on this host.
  struct HarnessObjects {
    std::vector<std::string> objects;
    int compiled = 0, reused = 0;
    int from_measurer = 0;      // how many are the measuring process's own objects
    MeasuringProcess measurer;  // whose objects serve the sources no rename applies to
    double seconds = 0;
  };
  // `digest` is harness_digest() of the harness sources, which the caller has already read.
  Result<std::optional<HarnessObjects>> harness_objects(const Compiler& cc,
                                                        const std::vector<std::string>& defines,
                                                        const std::string& cache_dir,
                                                        const std::string& digest);
  // The measuring process for this compiler and arch: found and checked, or built now.
  // nullopt: no runnable harness on this host. `sources`: harness_sources().
  Result<std::optional<MeasuringProcess>> measuring_process(const Compiler& cc,
                                                            const std::string& cache_dir,
                                                            const std::string& digest,
                                                            const std::vector<std::string>& sources);
  // Ok when the measuring process is still the agent's alone and the binary it built.
  Result<void> check_measurer(const MeasuringProcess& m) const;
  std::mutex measurer_mu_;
  std::map<std::string, MeasuringProcess> measurers_;
  std::optional<MeasuringProcess> measurer_;  // set by build: the one this run's stages use
  std::mutex compiler_mu_;
  std::mutex objects_mu_;
  std::map<std::string, std::shared_future<Result<std::string>>> objects_in_flight_;
  // One benchmark process of `binary`: its samples, or why it failed.
  TimedRun time_once(agent::StageContext& c, const std::string& binary,
                     const std::vector<std::string>& args);
  // A problem's kernel against kfleet's PyTorch references of the problem (eager,
  // torch.compile), each from the agent's cache or recorded and replayed now on case `cs` with
  // `args` (the kernel's benchmark command line): the verdict's `versus`, as JSON. A reference
  // that cannot be timed gives a comparison with a note, never a failure of the job
  // (harness_versus.cpp).
  nlohmann::json versus_pytorch(agent::StageContext& c, const CorrectnessCase& cs,
                                const std::vector<double>& kernel_us,
                                const std::vector<std::string>& args);
  // One reference timed now (run_pooled over the job's processes): its samples, or why none,
  // and whether that outcome may be cached (not when the fleet's setup or a stop was the cause).
  ReferenceTiming time_reference(agent::StageContext& c, const std::string& baseline,
                                 const std::string& source, const std::vector<std::string>& args,
                                 const nlohmann::json& key, bool& cacheable);
  // A generic problem's job: the resolved problem, written by build into an agent-owned,
  // read-only file (problem_spec_file) that the recorder and the measuring process read and are
  // given as --problem-spec; "" for every other job.
  std::string problem_spec_file_;
  // What the last Python recording launched, each kernel with its origin (recorded_kernels): the
  // recorder's report, for the verdict; set by run_stage, read by the stage that called it.
  std::optional<nlohmann::json> recorded_kernels_;
  // A Python job's benchmark recordings, kept for the job's later rounds (run_stage): each round
  // times the same launch with the same arguments, and recording it costs a Python with torch
  // and triton (10 to 15 s) where replaying costs about a second. Keyed by the recorder's
  // module and the stage's arguments; the launch list and device code are copies the agent took
  // into a folder of its own (under the build cache) as soon as the recorder ended and its files
  // passed the checks, so no later process of the job can change them. Dropped by build.
  struct KeptRecording {
    std::string folder, list;
    std::vector<std::string> device_code;
  };
  std::mutex kept_mu_;
  std::map<std::string, KeptRecording> kept_;
  void drop_kept_recordings();
  // A job naming a family's problem: the flags of each of its cases (family_problem_case_args).
  std::map<std::string, std::vector<std::string>> family_case_args_;
  std::vector<std::string> problem_reads() const {
    return problem_spec_file_.empty() ? std::vector<std::string>{} : std::vector<std::string>{problem_spec_file_};
  }
  std::string harness_binary_;   // set by build (this run's, possibly from the cache)
  std::string baseline_binary_;  // the reference's harness, when interleaved
  std::string compile_log_;      // the job sources' compiler output, for resources
};

// Reads metric lines a custom bench step prints ({"metric": "gflops", "value": ...}).
std::vector<nlohmann::json> parse_metric_lines(const std::string& stdout_text);


}  // namespace kfleet::backends
