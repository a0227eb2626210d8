#include "discovery/nvml.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include "discovery/gpu_naming.hpp"

namespace kfleet::backends {
namespace {

// The few NVML ABI pieces we use (nvml.h is not needed to build the agent).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr int kClockGraphics = 0, kClockSm = 1, kClockMem = 2;
constexpr int kTemperatureGpu = 0;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlPciInfo_t {  // nvmlPciInfo_st as nvmlDeviceGetPciInfo_v3 fills it
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlProcessInfo_t {  // v2 layout, as returned by the _v3 query
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*cc)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*driver)(char*, unsigned) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*minor)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*compute_mode)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*app_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*persistence)(nvmlDevice_t, int*) = nullptr;

  std::string why(nvmlReturn_t r) const {
    return error_string ? error_string(r) : "NVML error " + std::to_string(r);
  }
};

nlohmann::json GpuSnapshot::to_json() const {
  return {{"sm_clock_mhz", sm_clock_mhz}, {"mem_clock_mhz", mem_clock_mhz},
          {"max_sm_clock_mhz", max_sm_clock_mhz}, {"temperature_c", temperature_c},
          {"power_w", power_w}, {"power_limit_w", power_limit_w}};
}

Result<std::shared_ptr<Nvml>> Nvml::load() {
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    return make_error(Errc::unavailable,
                      "NVML (libnvidia-ml.so.1) not found: is the NVIDIA driver installed?");
  }
  std::shared_ptr<Nvml> n(new Nvml());
  n->lib_ = lib;
  n->api_ = std::make_unique<Api>();
  Api& a = *n->api_;
  bool missing = false;
  std::string missing_name;
  auto sym = [&](auto& fn, const char* name, bool required = true) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
    if (!fn && required && !missing) {
      missing = true;
      missing_name = name;
    }
  };
  sym(a.init, "nvmlInit_v2");
  sym(a.shutdown, "nvmlShutdown");
  sym(a.error_string, "nvmlErrorString", false);
  sym(a.count, "nvmlDeviceGetCount_v2");
  sym(a.handle, "nvmlDeviceGetHandleByIndex_v2");
  sym(a.name, "nvmlDeviceGetName");
  sym(a.cc, "nvmlDeviceGetCudaComputeCapability");
  sym(a.memory, "nvmlDeviceGetMemoryInfo");
  sym(a.clock, "nvmlDeviceGetClockInfo");
  sym(a.max_clock, "nvmlDeviceGetMaxClockInfo");
  sym(a.temperature, "nvmlDeviceGetTemperature");
  sym(a.power, "nvmlDeviceGetPowerUsage");
  sym(a.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  sym(a.driver, "nvmlSystemGetDriverVersion");
  sym(a.processes, "nvmlDeviceGetComputeRunningProcesses_v3", false);
  sym(a.uuid, "nvmlDeviceGetUUID", false);
  sym(a.pci, "nvmlDeviceGetPciInfo_v3", false);
  sym(a.minor, "nvmlDeviceGetMinorNumber", false);
  sym(a.compute_mode, "nvmlDeviceGetComputeMode", false);
  sym(a.app_clock, "nvmlDeviceGetApplicationsClock", false);
  sym(a.persistence, "nvmlDeviceGetPersistenceMode", false);
  if (missing) {
    return make_error(Errc::unavailable,
                      "NVML lacks " + missing_name + ": update the NVIDIA driver");
  }
  if (auto r = a.init(); r != kSuccess) {
    return make_error(Errc::unavailable, "nvmlInit failed: " + a.why(r));
  }
  return n;
}

Nvml::~Nvml() {
  if (api_ && api_->shutdown) api_->shutdown();
  // The library stays loaded: NVML keeps threads that must not lose their code.
}

Result<std::vector<GpuInfo>> Nvml::devices() {
  Api& a = *api_;
  unsigned count = 0;
  if (auto r = a.count(&count); r != kSuccess) {
    return make_error(Errc::unavailable, "nvmlDeviceGetCount: " + a.why(r));
  }
  char driver[96] = {};
  a.driver(driver, sizeof driver);
  std::vector<GpuInfo> out;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t d = nullptr;
    if (auto r = a.handle(i, &d); r != kSuccess) {
      return make_error(Errc::unavailable, "GPU " + std::to_string(i) + ": " + a.why(r));
    }
    char name[96] = {};
    a.name(d, name, sizeof name);
    int major = 0, minor = 0;
    a.cc(d, &major, &minor);
    nvmlMemory_t mem{};
    a.memory(d, &mem);
    GpuInfo g;
    g.name = name;
    g.gpu_class = nvidia_gpu_class(g.name);
    g.arch = nvidia_arch(major, minor);
    g.vendor = "nvidia";
    g.memory_bytes = static_cast<std::int64_t>(mem.total);
    g.driver = driver;
    g.extra["index"] = i;
    // The UUID is what CUDA_VISIBLE_DEVICES pins a child to (indices can differ between NVML
    // and CUDA); the PCI bus id says which board it is.
    char uuid[96] = {};
    if (a.uuid && a.uuid(d, uuid, sizeof uuid) == kSuccess) g.extra["uuid"] = std::string(uuid);
    nvmlPciInfo_t pci{};
    if (a.pci && a.pci(d, &pci) == kSuccess) {
      pci.busId[sizeof pci.busId - 1] = 0;
      g.extra["pci_bus_id"] = std::string(pci.busId);
    }
    // /dev/nvidia<minor> is this GPU's device node: the only one its job's sandbox gets.
    unsigned dev_minor = 0;
    if (a.minor && a.minor(d, &dev_minor) == kSuccess) g.extra["minor"] = dev_minor;
    g.extra["compute_capability"] = std::to_string(major) + "." + std::to_string(minor);
    if (auto s = snapshot(i); s.ok()) g.extra["snapshot"] = s->to_json();
    out.push_back(std::move(g));
  }
  return out;
}

Result<GpuSnapshot> Nvml::snapshot(unsigned index) {
  Api& a = *api_;
  nvmlDevice_t d = nullptr;
  if (auto r = a.handle(index, &d); r != kSuccess) {
    return make_error(Errc::unavailable, "GPU " + std::to_string(index) + ": " + a.why(r));
  }
  GpuSnapshot s;
  unsigned v = 0;
  // Each reading is best effort: some SKUs (and MIG slices) do not report power or clocks.
  if (a.clock(d, kClockSm, &v) == kSuccess) s.sm_clock_mhz = static_cast<int>(v);
  if (a.clock(d, kClockMem, &v) == kSuccess) s.mem_clock_mhz = static_cast<int>(v);
  if (a.max_clock(d, kClockSm, &v) == kSuccess) s.max_sm_clock_mhz = static_cast<int>(v);
  else if (a.max_clock(d, kClockGraphics, &v) == kSuccess) s.max_sm_clock_mhz = static_cast<int>(v);
  if (a.temperature(d, kTemperatureGpu, &v) == kSuccess) s.temperature_c = static_cast<int>(v);
  if (a.power(d, &v) == kSuccess) s.power_w = v / 1000.0;
  if (a.power_limit(d, &v) == kSuccess) s.power_limit_w = v / 1000.0;
  return s;
}

Result<nlohmann::json> Nvml::settings(unsigned index) {
  Api& a = *api_;
  nvmlDevice_t d = nullptr;
  if (auto r = a.handle(index, &d); r != kSuccess) {
    return make_error(Errc::unavailable, "GPU " + std::to_string(index) + ": " + a.why(r));
  }
  // What only an administrator sets, and what changes a timing: the enforced power limit, the
  // compute mode, the application (target) clocks, persistence. Unreadable ones are left out.
  nlohmann::json s = nlohmann::json::object();
  unsigned v = 0;
  int mode = 0;
  if (a.power_limit(d, &v) == kSuccess) s["power_limit_w"] = v / 1000.0;
  static const char* const kModes[] = {"default", "exclusive_thread", "prohibited", "exclusive_process"};
  if (a.compute_mode && a.compute_mode(d, &mode) == kSuccess)
    s["compute_mode"] = mode >= 0 && mode < 4 ? kModes[mode] : std::to_string(mode);
  if (a.app_clock && a.app_clock(d, kClockGraphics, &v) == kSuccess) s["application_sm_clock_mhz"] = v;
  if (a.app_clock && a.app_clock(d, kClockMem, &v) == kSuccess) s["application_mem_clock_mhz"] = v;
  if (a.persistence && a.persistence(d, &mode) == kSuccess) s["persistence_mode"] = mode != 0;
  return s;
}

Result<std::vector<unsigned>> Nvml::compute_processes(unsigned index) {
  Api& a = *api_;
  if (!a.processes) {
    return make_error(Errc::unavailable,
                      "NVML lacks nvmlDeviceGetComputeRunningProcesses_v3: update the driver");
  }
  nvmlDevice_t d = nullptr;
  if (auto r = a.handle(index, &d); r != kSuccess) {
    return make_error(Errc::unavailable, "GPU " + std::to_string(index) + ": " + a.why(r));
  }
  std::vector<nvmlProcessInfo_t> infos(8);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned n = static_cast<unsigned>(infos.size());
    auto r = a.processes(d, &n, infos.data());
    if (r == kInsufficientSize) {
      infos.resize(n + 8);
      continue;
    }
    if (r != kSuccess) return make_error(Errc::unavailable, "process query: " + a.why(r));
    std::vector<unsigned> pids;
    for (unsigned i = 0; i < n; ++i) {
      if (infos[i].pid != static_cast<unsigned>(::getpid())) pids.push_back(infos[i].pid);
    }
    return pids;
  }
  return make_error(Errc::unavailable, "process list on GPU " + std::to_string(index) +
                                           " kept growing while being read");
}

}  // namespace kfleet::backends
