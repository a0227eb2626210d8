#pragma once
// The harness command line (PROTOCOL.md, "Command line").
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kfleet_harness/abi.h"
#include "metrics.hpp"
#include "stop_rule.hpp"
#include "warmup_rule.hpp"

namespace kfleet::harness {

// --replay-bare-trigger's launch kinds (Options::replay_bare_trigger says what each launches;
// replay_bare.cu launches it).
inline constexpr std::array<const char*, 8> kReplayBareTriggers = {
    "noop-legacy", "noop-harness", "noop-nonblocking", "noop-blocking",
    "param-legacy", "noop-graph", "memset-legacy", "noop-legacy-pregraph"};

struct Options {
  std::string stage;  // probe | correctness | benchmark
  std::string case_name = "default";
  std::map<std::string, long long> shape;  // B,H,S,D or M,N,K
  std::map<std::string, kfleet_dtype> dtype;  // q,kv,out or a,b,out
  std::vector<std::uint64_t> seeds{0};
  bool causal = false, bias = false, l2_flush = true;
  // --inputs-writable (a diagnostic for the GPU proofs, never passed by the agent): the timed
  // launch runs with its inputs writable, without the per-sample access flip and its re-warm.
  bool inputs_writable = false;
  // --same-inputs MODE (a diagnostic for the GPU proofs, never passed by the agent): every timed
  // sample reads the same draw, the one `--plan` writes for the benchmark (seed 0 of the
  // refresh), instead of a new draw per sample: the sampled replay on the very bytes an
  // in-process timing of the plan reads, for problems whose time moves with the draw (grouped
  // GEMM's group sizes). MODE says how the draw is there before each sample, since a kernel can
  // run slower on freshly written inputs: `draw`, written again by the harness's draw kernel,
  // as each sample's new draw is; `copy`, restored by a device-to-device copy from a copy taken
  // at the first sample, as the in-process yardstick's copy_ restores it (--rewrite-inputs);
  // `kept`, written once and left, as a yardstick that rewrites nothing. "" when not given.
  std::string same_inputs;
  // --kernel-configs (a diagnostic for the GPU proofs): a `kernel_configs` line after the
  // benchmark, each timed kernel as CUPTI saw it run (the shared memory carve-out it executed
  // with, registers, shared memory, grid, block).
  bool kernel_configs = false;
  double softmax_scale = -1;  // < 0: 1/sqrt(D)
  kfleet_b_layout b_layout = KFLEET_B_NK;
  Tolerance tolerance;        // defaults applied by parse_options when no bound is given
  int workspace_mib = 64, device = 0;
  // Replay of a Python kernel (PYTHON.md): a buffer of the arena that the recorder's torch
  // allocates from during the launch; its size is this plus eight times the case's own buffers.
  // 0: none (C++ kernels, in-process timing).
  int python_scratch_mib = 0;
  StopRuleConfig stop;
  double warmup_max_s = 2;
  double warmup_min_s = 1;       // clamped to warmup_max_s
  double throttle_pct = 2;       // discard samples whose SM clock is this far below the best
  double idle_timeout_s = 10;    // the device must go idle this soon after a launch returns
  // Replay mode (ABI.md, "Recorded replay"). record_path: record the stage's launches there
  // instead of running them. replay_path + device_code: run the recorded launches from the
  // job's device code only. va_base: where both map the kernel's buffers.
  std::string record_path, replay_path, device_code;
  // How replay issues a recording of several operations: as the graph it was captured as (what
  // every verdict uses), or op by op on the stream (--replay-issue stream: a diagnostic of the
  // method, to hold a graph's gaps between kernels against a stream's; the agent never asks it).
  // One operation is issued on the stream as the launch function did; --replay-issue graph (a
  // diagnostic too) issues it as a graph of one node, to hold the two launches against each other.
  // "" (as above), "stream" or "graph".
  std::string replay_issue;
  std::string replay_dot;  // --replay-dot F: the replay's graph written there (DOT, verbose)
  // --replay-kernels builtin (a diagnostic of the method): each of the job's kernel nodes runs the
  // harness's own empty kernel in the job kernel's grid, block and dynamic shared memory, the job's
  // device code still loaded. It tells what the graph, the process and the tracer add between
  // kernels from what the job's code objects do. A recording of one kernel, issued on the stream,
  // is left as it is. No output is checked; the agent never asks it.
  bool replay_builtin_kernels = false;
  // --replay-kernels builtin-unloaded: the same, with the job's device code never loaded into the
  // context (a graph's kernels are not looked up), to tell what loaded code objects add.
  bool replay_builtin_unloaded = false;
  // --replay-graph-before-tracer (a diagnostic): the replay's graph is made before CUPTI is
  // enabled, as kfleet-measure did until 2026-12-05, to hold the two orders side by side.
  bool replay_graph_before_tracer = false;
  // --replay-bare N (a diagnostic, src/replay_bare.cu): at each stage of the benchmark (before
  // and after the warm-up, after the cross-check's calibration, after the timed runs), N more
  // launches of the replay timed as bench/gpu/replay_shapes.cu times a graph in a process of its
  // own, then with each step of the sample loop added to every launch: a `replay_bare` line each,
  // with the kernels' median span and gaps. It tells what the measuring process's state adds
  // from what its sample loop adds. Samples and the verdict are untouched.
  int replay_bare = 0;
  // --replay-bare-trigger T (a diagnostic, with --replay-bare): one launch kind T, nine times, between
  // a bare run before it and one after it, then the process ends: which launch lengthens the
  // graph's edges for good (a kernel on any stream but the harness's did on H100s, 2026-12-05).
  // T: noop-legacy, noop-harness, noop-nonblocking, noop-blocking (the empty kernel on that
  // stream), param-legacy (a kernel with an argument), noop-graph (the empty kernel as a graph, on
  // the legacy stream), memset-legacy, noop-legacy-pregraph (before the graph is made).
  std::string replay_bare_trigger;
  // --cupti-hw-trace: CUPTI's kernel timestamps from its hardware event system, asked before the
  // CUDA context is made (a diagnostic of the tracer, PROTOCOL.md; the agent never asks it).
  bool cupti_hw_trace = false;
  // Python kernels (PYTHON.md): kfleet-measure writes the stage's recordings'
  // args, buffers and fields there (python_plan.hpp) for the Python recorder, and exits.
  std::string plan_path;
  // With --plan: a folder where each arena buffer of the last recording is written as made
  // (<va in hex>.bin; not the python scratch): the case's inputs, for timing the same kernel
  // in-process on the same data (bench/gpu/inprocess_python_kernel.py).
  std::string plan_inputs;
  // A problem of the library (PROBLEM-ABI.md, "The problem spec"): the resolved spec kfleet
  // wrote; the case (--case) is one of its cases, and its shapes, dtypes and checks come from
  // the spec (the family options --shape, --dtype, --atol, ... are refused with it).
  std::string problem_spec;
  // --reference-check: the correctness stage only checks kfleet's GPU reference against the
  // fp64 CPU reference on --case at the first seed (PROBLEM-ABI.md, "The GPU reference,
  // checked"); no kernel runs. The agent runs it once per run, on the smallest of its cases.
  bool reference_check = false;
  // A family's case drawn as its problem's case says (docs/problems.md): --init TENSOR=SPEC,
  // SPEC the words of a problem spec's init line joined by '/' (normal/mean=0/std=1/
  // outliers=2,50,500/at=5,37). Tensors not named keep the family's uniform [-1, 1) draws.
  std::map<std::string, std::string> init;
  std::string family_option;  // the first family-only option given ("" when none)
  std::uint64_t va_base = 0x600000000000ull;
  int result_fd = -1;  // protocol lines go to this pipe instead of stdout
};

// "" on success, else what is wrong with the command line, in words.
std::string parse_options(int argc, const char* const* argv, Options* out);

// shape[key] or the error text naming the missing key.
std::string require_dims(const Options& o, const std::vector<std::string>& keys);

}  // namespace kfleet::harness
