#pragma once
// Which agents run which kernel.language (kernels/harness/PYTHON.md): shared by
// the scheduler (kfleetd), the agent and the CLI, from what an agent reports with its GPU.
#include <string>

#include <nlohmann/json.hpp>

#include "kfleet/common/model.hpp"

namespace kfleet {

// triton or torch: a Python launch module, recorded by the agent's Python, replayed by
// kfleet-measure (what the agent's replay path branches on).
bool is_python_language(const std::string& language);

// cuda on NVIDIA, hip on AMD, anything on a simulated GPU; triton and torch on NVIDIA where the
// agent's Python records them (extra["python"]["languages"], agent/backends/discovery/python.hpp).
bool gpu_runs_language(const GpuInfo& gpu, const std::string& language);

// One cell for `kfleet agents`: "torch 2.11.0+cu130, triton 3.6.0" from a GPU's extra, "no
// torch (...)" naming what is missing, or "-" when the agent reported no Python.
std::string python_runtime_summary(const nlohmann::json& gpu_extra);

}  // namespace kfleet
