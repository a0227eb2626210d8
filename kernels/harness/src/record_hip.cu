// The argument layouts of this binary's own device code, for the recorder on HIP (record.cu;
// ABI.md, "Recorded replay" and "HIP"). HIP has no cudaFuncGetParamInfo and a kernel node gives
// only pointers to its arguments, so the layout of each kernel the launch function enqueued
// comes from the code object metadata of this very binary (cpu/amdgpu_code_object.hpp).
// Compiled and unit-tested here; not yet run on an AMD GPU (ABI.md says what that leaves).
#include "replay_mode.hpp"

#if defined(KFLEET_HIP)
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "../cpu/amdgpu_code_object.hpp"

namespace kfleet::harness {
namespace {

bool same_layout(const std::vector<ParamSlot>& a, const std::vector<ParamSlot>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].offset != b[i].offset || a[i].size != b[i].size) return false;
  return true;
}

}  // namespace

// Every kernel's explicit argument layout in the device code linked into this binary, for this
// device's target: the job's kernels and the harness's own, one code object per translation
// unit. A name two of them give different layouts (kernels of one name in anonymous namespaces
// of two files: clang adds no per-file hash to `.name` on HIP) maps to nothing: such a kernel
// is refused when it is recorded, never replayed with the wrong layout.

const std::map<std::string, std::optional<std::vector<ParamSlot>>>& own_kernel_args() {
  static const auto* layouts = [] {
    auto* all = new std::map<std::string, std::optional<std::vector<ParamSlot>>>;  // process life
    std::ifstream in("/proc/self/exe", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string exe = ss.str(), arch = device_arch();
    std::string section;
    std::vector<std::string> code_objects;
    std::string e = elf_section(exe, ".hip_fatbin", &section);
    if (e.empty()) e = fatbin_code_objects(section, arch, &code_objects);
    for (const auto& co : code_objects) {
      std::map<std::string, std::vector<ParamSlot>> one;
      if (e.empty()) e = amdgpu_kernel_args(co, &one);
      for (auto& [name, slots] : one) {
        const auto it = all->find(name);
        if (it == all->end()) (*all)[name] = std::move(slots);
        else if (it->second && !same_layout(*it->second, slots)) it->second.reset();
      }
    }
    if (!e.empty())
      fail_setup("the recorder cannot read the kernel argument layout of its own device code (" +
                 arch + "): " + e);
    return all;
  }();
  return *layouts;
}

}  // namespace kfleet::harness

#endif  // KFLEET_HIP
