#pragma once
// A harness stage of a Python kernel (kernels/harness/PYTHON.md), the pieces the
// agent's replay path (harness_replay.cpp) calls instead of running the job's binary: the
// recorder's command line, what its sandbox must read, and the device code it wrote, checked
// before kfleet-measure is given it. Plain functions, tested without a GPU or torch.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "discovery/python.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::backends {

struct PythonRecorderCall {
  std::string python;          // PythonRuntime::python
  std::string harness_dir;     // kernels/harness (the recorder is harness_dir/python/...)
  std::string measurer;        // the build cache entry's kfleet-measure (plans the args)
  std::string source;          // the launch module: the job's first source, in its bundle
  std::string language;        // triton | torch
  std::string entry;           // kernel.entry, "" for the family's default
  std::string device_code_dir; // a fresh folder of the run: the images the measurer loads
  std::string cache_dir;       // Triton's and torch's caches, in the run's folder
  std::string record;          // the launch list to write
  // A torch.compile mode the recorder wraps the entry in (kfleet's compile reference of a
  // problem: max-autotune-no-cudagraphs); "" for none.
  std::string torch_compile = "";
};

// python -B -s harness_dir/python/kfleet_record.py --measure M --source S --language L [--entry E]
//   [--torch-compile MODE] --device-code-dir D --cache-dir C <stage args...> --record LIST
// `stage_args` are the harness's (`correctness --case ...`), as kfleet-harness would get them;
// the recorder hands them to kfleet-measure --plan.
std::vector<std::string> python_recorder_argv(const PythonRecorderCall& c,
                                              const std::vector<std::string>& stage_args);

// Whether the recorder's non-zero exit is the fleet's setup (PROTOCOL.md's exit 3: torch or
// triton missing, no GPU, a driver too old, kfleet-measure --plan failing) and not the kernel's:
// the message of its setup error line, or "" when the failure is the job's. Only a setup error
// printed before the recorder announced the job's code ({"type":"job_code"}, printed just
// before it imports the launch module) counts: from that line on the job's code runs in the
// recorder's process and could print anything, so any failure after it is the kernel's. `said`:
// the recorder's stdout lines, in order.
std::string python_recorder_setup_failure(int exit_code, const std::vector<nlohmann::json>& said);

// What the recorder's sandbox reads besides the run's folder and the build cache entry: the
// Python install and its packages, the recorder itself, the C compiler's and CUDA's folders.
std::vector<std::string> python_recorder_read_paths(const PythonRuntime& py,
                                                    const std::string& harness_dir);

// The recorder's PATH: CUDA's bin (nvcc for load_inline), then the interpreter's own folder,
// where a virtualenv keeps the tools its packages run (ninja, which load_inline needs), then
// the system's. Every folder on it is one the sandbox reads anyway (python_recorder_read_paths).
std::string python_recorder_path_env(const PythonRuntime& py, const std::string& cuda_home);

// How many compile workers torch.compile's inductor may start in a recorder's sandbox
// (TORCHINDUCTOR_COMPILE_THREADS): by default one per CPU, each a Python process with torch
// imported. In a sandbox with a memory limit, one: inductor then compiles in the recorder's own
// process and starts no pool, so no worker the limit kills can leave the pool waiting on it until
// the time limit. On an H200 (16 CPUs, 8 GiB sandbox, 2026-12-04) fp8_block_gemm's reference,
// 10.6 s outside any sandbox, was silent after lowering past 210 s with 16 workers and past 360 s
// with 6; scaled_mm's past 190 s. 0 (inductor's default) where the sandbox sets no memory limit.
unsigned recorder_compile_workers(std::uint64_t memory_bytes);

// The device code the recorder wrote, comma-separated for --device-code: every entry of `dir`
// must be a regular file (no symlink, no folder) named <16 hex>.cubin or <16 hex>.fatbin, at most
// 256 of them and 2 GiB in all; invalid_argument naming the first that is not (the job's
// process wrote them: this is its failure), or when there are none.
Result<std::string> python_device_code(const std::string& dir);

// When the recorder wrote no device code: why, if its launch list says so: every recording's
// launch returned kfleet.UNSUPPORTED (declined the case) and launched nothing. "" otherwise.
// Only words for the error that follows either way: nothing is replayed from such a list.
std::string python_launches_declined(const std::string& list_path);

}  // namespace kfleet::backends
