#pragma once
// Internals shared by the harness's GPU sources (not part of the kernel ABI).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../cpu/inputs.hpp"
#include "../cpu/integrity.hpp"
#include "../cpu/json_line.hpp"
#include "../cpu/launch_list.hpp"
#include "kfleet_harness/abi.h"
#include "kfleet_harness/problem_abi.h"
#include "kfleet_harness/gpu_runtime.hpp"
#include "../cpu/metrics.hpp"
#include "../cpu/options.hpp"
#include "../cpu/timer_rate.hpp"

namespace kfleet::harness {

// Which side of the line a runtime error falls on (PROTOCOL.md exit status 3): "kernel" while
// the kernel's launch and the synchronisation after it run, "setup" otherwise.
void set_phase(const char* phase);
[[noreturn]] void fail_usage(const std::string& message);
[[noreturn]] void fail_setup(const std::string& message);
// Replay mode: what the recorder wrote, or the job's device code, is refused (exit 4, phase
// "replay"): the kernel's doing, not the host's.
[[noreturn]] void fail_replay(const std::string& message);

// The non-blocking stream every harness operation between samples runs on (flush, poison,
// fresh inputs, references, checks, the clock probe): the kernel gets the legacy default
// stream, so activity on any stream but this one outside a launch is the kernel's.
gpuStream_t harness_stream();

// Waits for the whole device to go idle, at most `timeout_s`; past that `on_timeout` prints its
// protocol line and the process exits 1 (a persistent kernel or work left running never lets the
// device go idle, and that is the kernel's failure, named, not a hang).
void device_sync_bounded(double timeout_s, const std::function<void()>& on_timeout);

// Inputs mapped so they can be made read-only around a launch (protect.cu). protected_alloc
// returns nullptr where that is not possible (plain allocations then).
void* protected_alloc(std::size_t bytes);
bool protected_free(void* p);
bool inputs_read_only(bool read_only);  // false when no input is protected or it failed
// One correctness launch (correctness.cu): the inputs read-only, `launch()`, the whole device
// idle (bounded: a launch whose work never ends fails seed `seed` of the case with its line and
// the process exits), then the inputs writable again. The launch's status, its wall time, and
// whether the inputs were read-only.
struct CheckedLaunch {
  int status = 0;
  double ms = 0;
  bool read_only = false;
};
CheckedLaunch checked_launch(const Options& o, std::uint64_t seed, const std::function<int()>& launch);
bool inputs_protected();
// After inputs_read_only flips: every buffer a launch may use read once per 64 KiB on the
// harness's stream, so the launch does not pay the page walks the flip caused (protect.cu).
void warm_translations();
bool inputs_are_read_only_now();

// The fixed-address arena of replay mode (protect.cu): recorder and measurer map the buffers a
// kernel may touch (inputs, output, workspace) at the same virtual addresses, in the same order,
// so that the recorded launch's parameter bytes are valid in the measuring process.
bool fixed_arena_open(std::uint64_t base, std::string* why);
bool fixed_arena_active();
std::uint64_t fixed_arena_base();
std::uint64_t fixed_arena_end();
std::vector<FixedBuffer> fixed_buffers();
std::vector<FixedBuffer> fixed_input_buffers();  // the inputs among them (Placement::input)
void* fixed_alloc(std::size_t bytes, bool read_only_capable, const std::string& name);
bool fixed_free(void* p);
constexpr std::uint64_t kDefaultArenaBase = 0x600000000000ull;  // 96 TiB: far from the heap,
                                                                // libraries and the stack
constexpr std::uint64_t kArenaBytes = 1ull << 40;                // reserved, not backed

// Where a buffer lives: plain device memory (the harness's own), an input (read-only around a
// launch where possible), or kernel-visible (output, workspace). In replay mode the last two
// come from the fixed arena.
enum class Placement { plain, input, kernel };

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes, bool protect = false)
      : DeviceBuffer(bytes, protect ? Placement::input : Placement::plain, "") {}
  DeviceBuffer(std::size_t bytes, Placement where, const std::string& name);
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }
  void upload(const void* host, std::size_t bytes);
  std::vector<std::uint8_t> download() const;

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

struct DeviceInfo {
  std::string name, arch;
  int sm_count = 0, sm_clock_mhz = 0, mem_clock_mhz = 0, mem_bus_bits = 0;
  std::size_t l2_bytes = 0, mem_bytes = 0;
  double peak_bw_gbs = 0, peak_tflops = 0, peak_tflops_fp8 = 0;  // dense tensor, fp16 / fp8
};

// GPU activity records (CUPTI on CUDA), for timing that sees every stream (activity.cu).
class ActivityTracer {
 public:
  // The process's tracer, or nullptr with *why_not saying why there is none.
  static ActivityTracer* start(std::string* why_not);
  // CUPTI's hardware event system for kernel timestamps (--cupti-hw-trace, a diagnostic): only
  // before the CUDA context exists. False with *why_not where CUPTI or the GPU refuses it.
  static bool enable_hw_trace(std::string* why_not);
  std::uint64_t now() const;               // ns, the records' clock
  std::vector<ActivityRecord> flush();     // every record completed since the last flush
  std::uint32_t harness_stream_id() const { return harness_stream_id_; }
  const std::string& library() const { return library_; }
  // --kernel-configs: from now on, each kernel record's config is counted (a diagnostic); the
  // counts so far, as the JSON array of a `kernel_configs` line, in first-seen order.
  void count_kernel_configs();
  std::string kernel_configs_json() const;

 private:
  std::uint32_t harness_stream_id_ = 0;
  std::string library_;
};
DeviceInfo probe_device(int device);  // selects the device and prints the `device` line
double measure_sm_clock_mhz();          // NaN where not measurable (HIP)
// The (host CLOCK_MONOTONIC_RAW, GPU timer) pair each clock probe left since the last call
// (timer_rate.hpp); none where the probe does not run (HIP).
std::vector<TimerStamp> take_timer_stamps();

// GPU fp32 references and the on-device output check (gpu_reference.cu).
void attention_reference_f32(const float* q, const float* k, const float* v, float* out,
                             int batch, int heads, int seq, int dim, bool causal, float scale);
void scaled_mm_reference_f32(const float* a, const float* b, const float* bias, float* out,
                             int m, int n, int k, bool b_nk, float scale);
struct DeviceCheck {
  unsigned long long unwritten = 0, nan = 0, inf = 0, violations = 0;
  float max_abs = 0;
};
// fp16, bf16 (poison 0xFFFF) and fp32 (poison 0xFFFFFFFF) outputs.
DeviceCheck check_on_device(const void* out, kfleet_dtype out_dtype, const float* ref,
                            std::size_t n, double atol, double rtol);

// kfleet-measure --replay-bare N (a diagnostic of the method, replay_bare.cu): N + 10 launches of
// the replay timed as bench/gpu/replay_shapes.cu times a graph in a process of its own (the L2
// flush of `flush_bytes` on the harness's stream, the device synchronized, the launch between two
// events on the legacy stream, a thread to wait), the first 10 dropped, with `with`'s steps of the
// sample loop (BareStep) added to each; one `replay_bare` line with the kernels' median span and
// gaps. The tracer's records so far are dropped: it runs between the stages of the run.
enum BareStep : unsigned {
  kBareTracerFlush = 1, kBareClockProbe = 2, kBarePoison = 4, kBareRefresh = 8, kBareMallocFree = 16,
  kBareKernelFlush = 32,
  kBareSameSeed = 64, kBareSeedOne = 128  // with kBareRefresh: seed 0 (the inputs' own) or 1 each time
};
class Problem;
void replay_bare_runs(const Options& o, std::size_t flush_bytes, Problem& p, ActivityTracer& tracer, const char* when,
                      unsigned with);
// --replay-bare-trigger (options.hpp): one launch kind, nine times, the device synchronized after each.
void replay_bare_trigger(const std::string& kind);
void launch_harness_noop(gpuStream_t stream);  // cold_timer.cu: calibrate_cross_check's empty kernel

class ReplayGraph;  // replay.cu

// One case of a family at one seed: inputs on the device, the fp32 reference, the launch.
class Problem {
 public:
  virtual ~Problem() = default;
  // The kernel's status (KFLEET_OK/UNSUPPORTED): the recorded graph when one is attached
  // (replay mode), else the job's launch function in this process.
  int launch(gpuStream_t stream);
  virtual int launch_entry(gpuStream_t stream) = 0;  // the job's launch function
  // The ABI args struct's bytes: the recording is made for, and checked against, these.
  virtual std::vector<std::uint8_t> args_bytes() const = 0;
  std::shared_ptr<ReplayGraph> replay;
  // Replay of a Python kernel: the arena buffer torch allocates from during the launch
  // (--python-scratch-mib; with_python_scratch), mapped last, the same in the plan and replay.
  std::unique_ptr<DeviceBuffer> python_scratch;
  virtual std::vector<double> cpu_reference() const = 0;
  // Each output's sum of |terms| (for a sum of products: the reference of the inputs' absolute
  // values, in fp64), for the check's dot_rtol; empty where the problem has no such sums.
  virtual std::vector<double> cpu_reference_terms() const { return {}; }
  // Outputs that do no work (all zeros; for attention the mean of V), for the gate-strength
  // check: host-side, from the inputs as generated.
  virtual std::vector<DoNothing> do_nothing_outputs() const = 0;
  bool fp8_operands = false;  // the roofline may assume fp8 tensor math
  // New input content on the device from `seed` (the same buffers; fp8 scale 1/448), outside
  // any timed window. The reference then needs compute_reference(true).
  virtual void refresh_inputs(std::uint64_t seed);
  // "" or which input differs from what refresh_inputs(seed) generated (device-side compare).
  virtual std::string inputs_changed_since_refresh();
  // The fp32 reference for the inputs now on the device: from the fp32 copies uploaded with
  // host-generated inputs, or (decode = true) decoded on the device from the encoded inputs.
  virtual void compute_reference(bool decode);
  // Zeroes the fp32 reference and the fp32 input copies: nothing a kernel could find and copy
  // is left in device memory while it runs.
  virtual void scrub_reference();
  // Before each launch, on `stream` (outside any timed window): every output poisoned (0xFF
  // bytes), and an in-place (inout) slot given a fresh copy of its input.
  virtual void prepare_outputs(gpuStream_t stream);
  // A timed run's re-check (benchmark.cu): the outputs against a reference computed for the
  // inputs now on the device. "" or why they fail; *max_abs the largest error seen.
  virtual std::string recheck_outputs(const Options& o, float* max_abs);
  const DeviceBuffer& output() const { return *output_; }
  kfleet_dtype out_dtype() const { return out_dtype_; }
  std::size_t out_elements() const { return out_elements_; }
  const float* reference_device() const { return static_cast<const float*>(reference_->get()); }
  std::vector<double> reference_host() const;
  std::vector<float> output_host(std::size_t* unwritten) const;  // decoded; counts poison left
  virtual std::string inputs_changed() const;  // "" or which input the kernel wrote
  double flops = 0, bytes = 0;

 protected:
  struct Input {
    std::string name;
    HostTensor host;
    std::uint64_t hash = 0;
    float scale = 1.0f;             // current dequantisation scale (host's, or 1/448 refreshed)
    std::unique_ptr<DeviceBuffer> device, real_f32;  // encoded, and dequantised for the ref
  };
  Input& add_input(const std::string& name, HostTensor t);
  void allocate_output(kfleet_dtype t, std::size_t elements);
  virtual void run_reference() = 0;   // the family's fp32 reference from the fp32 inputs
  virtual void update_scales() = 0;   // copy inputs_[i].scale into the kernel's args
  std::uint64_t refresh_seed_ = 0;
  std::deque<Input> inputs_;  // a deque: add_input hands out references that must stay valid
  std::unique_ptr<DeviceBuffer> output_, reference_, workspace_;
  kfleet_dtype out_dtype_ = KFLEET_FP16;
  std::size_t out_elements_ = 0;
};

bool attention_kernel_linked();
bool scaled_mm_kernel_linked();
std::unique_ptr<Problem> make_attention_problem(const Options& o, std::uint64_t seed);
std::unique_ptr<Problem> make_scaled_mm_problem(const Options& o, std::uint64_t seed);
// A problem of the library (--problem-spec; generic_problem.cu): its kernel's entry, and the
// correctness stage with one check per output (the spec's).
bool problem_kernel_linked();
int call_problem_entry(const kfleet_problem_args* args, gpuStream_t stream);
std::unique_ptr<Problem> make_generic_problem(const Options& o, std::uint64_t seed);
int run_generic_correctness(const Options& o);
// --reference-check: the GPU reference of --case against the fp64 CPU reference (0: they agree;
// exit 3, an error line of phase "reference": they do not).
int run_reference_check(const Options& o);
// Input `name` (slot `slot`) of a family's case: drawn as --init says (its problem's case:
// problem_inputs.hpp, the stream make_case uses for `family`, the case and the seed; rows of
// `cols`), else the family's uniform [-1, 1) draw from tensor_seed(case, seed, slot).
HostTensor family_input(const Options& o, const char* family, const char* name, int slot,
                        kfleet_dtype t, std::size_t n, std::size_t cols, std::uint64_t seed);
// "" or why an --init names no input of the family (`inputs`: its input names).
std::string unknown_init(const Options& o, const std::vector<std::string>& inputs);

std::unique_ptr<Problem> make_problem(const Options& o, std::uint64_t seed);
// `p` with its python scratch buffer when the options ask for one (replay of a Python kernel).
std::unique_ptr<Problem> with_python_scratch(const Options& o, std::unique_ptr<Problem> p);
// The plan's fields of a problem of the library (python_plan.hpp, problem_fields_json): "" with
// *error when `p` is not one.
std::string problem_plan_fields(const Problem& p, std::string* error);

// Replay mode (record.cu, replay.cu, for both runtimes; what only HIP needs in record_hip.cu and
// replay_hip.cu; what they share in replay_mode.hpp).
int run_record(const Options& o);
// Python kernels (plan.cu): the stage's recordings' args and buffers, for the Python recorder.
int run_plan(const Options& o);
// Loads the launch lists and the job's device code named by the options; attaches the graph
// recorded for `what` to `p` (fails the setup with the reason when it cannot).
void attach_replay(const Options& o, Problem& p, const std::string& what);
std::string recording_name(const std::string& stage, std::uint64_t seed);
// The recording for `what`, checked as anything from the job's process is: this case's args,
// these buffers, every address inside them (or not device memory at all), acyclic edges, whose
// plan goes to `plan`. Refused with exit 4 otherwise (runtime-neutral: replay.cu).
const LaunchList& checked_recording(const Options& o, Problem& p, const std::string& what,
                                    const std::function<bool(std::uint64_t)>& is_device_address,
                                    GraphPlan* plan);
int replay_launch(ReplayGraph& r, gpuStream_t stream);
bool replay_is_graph(const ReplayGraph& r);  // launched as its graph, not op by op on the stream

int run_correctness(const Options& o);
int run_benchmark(const Options& o, const DeviceInfo& dev);

}  // namespace kfleet::harness
