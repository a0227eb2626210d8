#pragma once
// AMD GPUs from sysfs (the KFD topology and DRM cards), no ROCm needed; amd-smi / rocm-smi add
// clocks, power and temperature when they are installed.
#include <string>
#include <vector>

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

}  // namespace kfleet::backends
