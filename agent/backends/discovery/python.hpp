#pragma once
// The agent's Python for Triton and torch kernels (kernels/harness/PYTHON.md):
// found once as the agent starts, its versions reported with the GPU (GpuInfo::extra["python"],
// shown by `kfleet agents`), and the languages it can record used to schedule jobs
// (kfleet::gpu_runs_language). A missing piece is named: the fleet's setup, never a job's failure.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/model.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::backends {

struct PythonRuntime {
  std::string python;          // the interpreter's path, as the recorder is run with it
  std::string python_version;  // "3.12.3"
  std::string torch_version, torch_cuda;  // "2.11.0+cu130", "13.0"; "" without torch
  std::string triton_version;             // "3.6.0"; "" without triton
  bool keep_graph = false;     // torch.cuda.CUDAGraph(keep_graph=True): the graph stays readable
  std::vector<std::string> languages;  // what it can record: "torch", and "triton" with both
  std::vector<std::string> missing;    // each missing piece, named ("triton: No module named ...")
  // What the recorder reads inside the job's sandbox: the install (sys.prefix, site-packages,
  // torch's and triton's folders, Python's headers for Triton's launcher stub), absolute paths.
  std::vector<std::string> paths;
  std::string cc;         // the C compiler Triton builds its launcher with ("" = none found)
  std::string cuda_home;  // torch.utils.cpp_extension.CUDA_HOME: nvcc for load_inline
  nlohmann::json to_json() const;
};

// The Python the agent records Python kernels with: $KFLEET_PYTHON, else `python3` on PATH.
// Runs it isolated (`-I -B`, the agent's environment without secrets) with a probe that imports
// torch and triton and prints one line; `timeout_s` bounds it (importing torch takes seconds).
// An `unavailable` error when no Python runs at all; a runtime with empty `languages` and
// `missing` saying why when it runs but cannot record.
Result<PythonRuntime> discover_python(const std::string& python = "", double timeout_s = 120);

// The probe's output -> the runtime (CI tests this without torch). invalid_argument when the
// output has no probe line.
Result<PythonRuntime> parse_python_probe(const std::string& python, const std::string& output);

// The probe program `discover_python` runs (python -I -B -c <this>).
const std::string& python_probe_program();

// What the agent reports: GpuInfo::extra["python"] = runtime.to_json() (or {"error": why}); the
// scheduler then asks kfleet::gpu_runs_language (kfleet/common/language.hpp).

}  // namespace kfleet::backends
