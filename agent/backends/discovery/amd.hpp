#pragma once
// AMD GPUs from sysfs (the KFD topology and DRM cards), no ROCm needed; amd-smi / rocm-smi add
// clocks, power and temperature when they are installed.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "discovery/nvml.hpp"
#include "kfleet/common/model.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::backends {

// Reads `<sys_root>/class/kfd/kfd/topology/nodes/*/properties` (GPU nodes have a non-zero
// gfx_target_version) and, for names and VRAM, `<sys_root>/class/drm/card*/device/` with vendor
// 0x1002. `sys_root` is "/sys" except in tests. An empty list when there are no AMD GPUs.
std::vector<GpuInfo> discover_amd_gpus(const std::string& sys_root = "/sys");

// Pids other than `self` that hold compute state on the GPU whose KFD id is `gpu_id` (the
// node's topology/nodes/N/gpu_id; 0 = any GPU), from `<sys_root>/class/kfd/kfd/proc/<pid>/`:
// a compute queue on it (queues/<qid>/gpuid, which the driver creates with the queue and removes
// with it) or VRAM held on it (vram_<gpu_id> > 0). Sorted; empty when KFD lists nobody.
std::vector<unsigned> amd_compute_processes(const std::string& sys_root, unsigned long gpu_id,
                                            unsigned self);

// Parses one KFD node's `properties` text: "gfx_target_version 110501\n..." -> value; 0 when
// the key is absent.
long kfd_property(const std::string& properties_text, const std::string& key);

// Clocks, temperature and power of GPU `index` from amd-smi (JSON) or rocm-smi; an
// `unavailable` error when neither tool is installed.
Result<GpuSnapshot> amd_snapshot(unsigned index);

// Parses `rocm-smi --showclocks --showtemp --showpower --json` output for card `index`.
Result<GpuSnapshot> parse_rocm_smi_json(const std::string& text, unsigned index);

// The settings of GPU `index` that belong to the fleet, not the job, from amd-smi's JSON: the
// power cap and the other limits (`amd-smi static --limit`), the clock levels (`--clock`), the
// compute and memory partition (`--partition`) and the performance level (`amd-smi metric
// --perf-level`), as one flat object ("limit.max_power.value": 300, "perf_level": "AUTO").
// `unavailable` when amd-smi is not installed or fails (the caller then checks nothing, as the
// CUDA backend does without NVML).
Result<nlohmann::json> amd_settings(unsigned index);

// Flattens the settings of GPU `index` from amd-smi's JSON (a list of per-GPU objects with a
// "gpu" member, or one such object) into `out`: the members named in `keys`, nested objects
// joined with ".". invalid_argument when the text is not amd-smi's JSON for that GPU.
Result<void> parse_amd_smi_settings(const std::string& text, unsigned index,
                                    const std::vector<std::string>& keys, nlohmann::json& out);

}  // namespace kfleet::backends
