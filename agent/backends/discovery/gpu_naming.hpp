#pragma once
// Pure mappings from what drivers report to what jobs name: marketing names to GPU classes,
// compute capabilities and gfx target versions to compiler architectures.
#include <optional>
#include <string>

namespace kfleet::backends {

// "NVIDIA L4" -> "L4", "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA H200" -> "H200",
// "Tesla T4" -> "T4"; unknown names keep their last word-ish model ("NVIDIA RTX 6000 Ada
// Generation" -> "RTX 6000 Ada"). Never empty for a non-empty name.
std::string nvidia_gpu_class(const std::string& name);

// 8.9 -> "sm_89"; 9.0 -> "sm_90a" and 10.0 -> "sm_100a" (the arch-specific targets that
// wgmma / TMA / tcgen05 kernels need on those parts).
std::string nvidia_arch(int cc_major, int cc_minor);

// The KFD topology's gfx_target_version (major*10000 + minor*100 + stepping) -> "gfx1151";
// 90010 -> "gfx90a" (minor and stepping are hex digits). nullopt for 0 (a CPU node).
std::optional<std::string> amd_gfx_arch(long gfx_target_version);

}  // namespace kfleet::backends
