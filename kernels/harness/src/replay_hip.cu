// The job's device code on HIP, for the measuring side of replay mode (replay.cu; ABI.md,
// "Recorded replay" and "HIP"): the code objects clang bundled into the job's objects (section
// .hip_fatbin, the bundle entry for this device's target), loaded with hipModuleLoadData;
// kernels are found by the mangled name the recorder wrote (hipModuleGetFunction). Compiled
// here; not yet run on an AMD GPU (ABI.md says what that leaves).
#include "replay_mode.hpp"

#if defined(KFLEET_HIP)
#include <elf.h>

#include <cstring>
#include <deque>
#include <map>
#include <sstream>

#include "../cpu/amdgpu_code_object.hpp"

namespace kfleet::harness {
namespace {

// The code objects for `arch` in one of the job's files: a host object or executable (its
// .hip_fatbin), a bare offload bundle, or a code object.
std::vector<std::string> code_objects_of(const std::string& path, const std::string& arch) {
  const std::string file = read_file(path);
  std::vector<std::string> out;
  std::string e;
  Elf64_Ehdr eh{};
  const bool elf = file.size() >= sizeof eh && std::memcmp(file.data(), ELFMAG, SELFMAG) == 0;
  if (elf) std::memcpy(&eh, file.data(), sizeof eh);
  if (elf && eh.e_machine == EM_AMDGPU) {
    out.push_back(file);
  } else if (elf) {
    std::string section;
    e = elf_section(file, ".hip_fatbin", &section);
    if (e.empty()) e = fatbin_code_objects(section, arch, &out);
  } else {
    out.emplace_back();
    e = bundle_code_object(file, arch, &out.back());
  }
  if (!e.empty()) fail_replay(path + ": " + e + " (was it compiled by clang or hipcc for " + arch + "?)");
  return out;
}

struct DeviceCode {
  std::deque<std::string> images;  // what each module was loaded from, kept for its life
  std::vector<hipModule_t> modules;
  std::map<std::string, hipFunction_t> kernels;
};

DeviceCode& device_code(const Options& o) {
  static DeviceCode* code = [&] {
    auto* c = new DeviceCode;  // never freed: the runtime unloads modules at exit
    const std::string arch = device_arch();
    std::stringstream in(o.device_code);
    std::string path;
    while (std::getline(in, path, ',')) {
      if (path.empty()) continue;
      for (auto& image : code_objects_of(path, arch)) {
        c->images.push_back(std::move(image));
        hipModule_t m{};
        const hipError_t e = hipModuleLoadData(&m, c->images.back().data());
        if (e != hipSuccess)
          fail_setup("cannot load the device code of " + path + ": " + hipGetErrorString(e));
        c->modules.push_back(m);
      }
    }
    if (c->modules.empty()) fail_setup("replay mode needs --device-code: the job's objects");
    return c;
  }();
  return *code;
}

}  // namespace

// The launch's LDS (the function's static bytes plus the node's dynamic bytes) against what a
// workgroup of this device has: ROCm has let more than that run (launch_list.hpp, lds_over_limit).
void check_lds(hipFunction_t f, const KernelNode& k) {
  int static_bytes = 0, limit = 0, dev = 0;
  KFLEET_GPU_CHECK(hipFuncGetAttribute(&static_bytes, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
  KFLEET_GPU_CHECK(hipGetDevice(&dev));
  KFLEET_GPU_CHECK(hipDeviceGetAttribute(&limit, hipDeviceAttributeMaxSharedMemoryPerBlock, dev));
  const std::string why = lds_over_limit(k.function, static_bytes, k.shared_bytes, limit, device_arch());
  if (!why.empty()) fail_replay(why);
}

hipFunction_t find_kernel(const Options& o, const KernelNode& k) {
  DeviceCode& code = device_code(o);
  if (auto it = code.kernels.find(k.function); it != code.kernels.end()) {
    check_lds(it->second, k);
    return it->second;
  }
  // Dynamic shared memory needs no opt-in on AMD GPUs up to the device's limit, so the
  // attribute the launch function set is not applied here (and HIP has no setter for a
  // module's function).
  hipFunction_t found{};
  int modules_with_it = 0;
  for (auto m : code.modules) {
    hipFunction_t f{};
    if (hipModuleGetFunction(&f, m, k.function.c_str()) == hipSuccess) {
      found = f;
      ++modules_with_it;
    }
    (void)hipGetLastError();
  }
  // One name in two of the job's files (anonymous namespaces: clang adds no per-file hash on
  // HIP) could be either kernel: neither is run.
  if (modules_with_it > 1)
    fail_replay("the launch list names kernel " + k.function + ", which " +
                std::to_string(modules_with_it) + " of the job's files define: give the kernels "
                "distinct names so that each can be found by its own");
  if (modules_with_it == 0)
    fail_replay("the launch list names kernel " + k.function + ", which is not in the job's device "
               "code: replay runs only kernels compiled from the job's sources");
  check_lds(found, k);
  code.kernels[k.function] = found;
  return found;
}

}  // namespace kfleet::harness

#endif  // KFLEET_HIP
