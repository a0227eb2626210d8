// Device memory mapped with the virtual memory management API, for two uses:
//  - read-only inputs while a kernel runs (ABI.md: a kernel never writes its inputs, not even to
//    restore them afterwards): their access is set to read-only around every launch, so a write
//    faults at once, whatever the kernel does afterwards. Where that cannot be had the inputs are
//    plain allocations and the lines say `"inputs_read_only":false`; mutation is then caught by
//    hashing / re-generation only;
//  - the fixed-address arena of replay mode: recorder and measurer map the same buffers at the
//    same virtual addresses.
// Both map physical memory the same way (map_backed); what differs is where the address comes
// from. CUDA's driver API is resolved from libcuda with dlopen (no link-time dependency); HIP's
// hipMem* functions are in libamdhip64, which the harness links anyway.
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "harness.hpp"

#if defined(KFLEET_CUDA)
#include <cuda.h>
#include <dlfcn.h>
#endif

namespace kfleet::harness {
namespace {

// ---- The virtual memory management API of either runtime: addresses as integers, a physical
// allocation as an opaque handle ----
using VmmHandle = std::uint64_t;

void* as_ptr(std::uint64_t va) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(va)); }

#if defined(KFLEET_CUDA)
// Read-only inputs: CUDA enforces CU_MEM_ACCESS_FLAGS_PROT_READ (a write faults).
constexpr bool kReadOnlyInputs = true;
constexpr bool kProbeArenaMapping = false;  // seen to work on every CUDA GPU the arena ran on
constexpr const char* kRuntime = "CUDA";
constexpr const char* kReserveCall = "cuMemAddressReserve";
constexpr const char* kErrorType = "CUresult";

struct Vmm {
  bool tried = false, ok = false;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
};
Vmm g_vmm;

bool vmm_load() {
  if (g_vmm.tried) return g_vmm.ok;
  g_vmm.tried = true;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) h = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) return false;
  auto get = [&](auto& fn, const char* a, const char* b) {
    void* p = dlsym(h, a);
    if (!p && b) p = dlsym(h, b);
    std::memcpy(&fn, &p, sizeof p);
    return p != nullptr;
  };
  g_vmm.ok = get(g_vmm.granularity, "cuMemGetAllocationGranularity", nullptr) &&
             get(g_vmm.create, "cuMemCreate", nullptr) &&
             get(g_vmm.reserve, "cuMemAddressReserve", nullptr) &&
             get(g_vmm.map, "cuMemMap", nullptr) &&
             get(g_vmm.set_access, "cuMemSetAccess", nullptr) &&
             get(g_vmm.unmap, "cuMemUnmap", nullptr) &&
             get(g_vmm.release, "cuMemRelease", nullptr) &&
             get(g_vmm.address_free, "cuMemAddressFree", nullptr);
  return g_vmm.ok;
}

CUmemAllocationProp device_prop(int dev) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  return prop;
}

std::size_t vmm_granularity(int dev) {
  const CUmemAllocationProp prop = device_prop(dev);
  std::size_t gran = 0;
  if (g_vmm.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS) return 0;
  return gran;
}
bool vmm_create(VmmHandle* h, std::size_t size, int dev) {
  const CUmemAllocationProp prop = device_prop(dev);
  CUmemGenericAllocationHandle made = 0;
  if (g_vmm.create(&made, size, &prop, 0) != CUDA_SUCCESS) return false;
  *h = made;
  return true;
}
// `fixed` 0: anywhere; else exactly there. The driver's status, for the message.
int vmm_reserve(std::uint64_t* va, std::size_t size, std::size_t align, std::uint64_t fixed) {
  CUdeviceptr got = 0;
  const CUresult r = g_vmm.reserve(&got, size, align, static_cast<CUdeviceptr>(fixed), 0);
  *va = got;
  return static_cast<int>(r);
}
bool vmm_map(std::uint64_t va, std::size_t size, VmmHandle h) {
  return g_vmm.map(va, size, 0, h, 0) == CUDA_SUCCESS;
}
bool vmm_set_access(std::uint64_t va, std::size_t size, bool read_only) {
  int dev = 0;
  (void)gpuGetDevice(&dev);
  CUmemAccessDesc d{};
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = dev;
  d.flags = read_only ? CU_MEM_ACCESS_FLAGS_PROT_READ : CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return g_vmm.set_access(va, size, &d, 1) == CUDA_SUCCESS;
}
void vmm_unmap(std::uint64_t va, std::size_t size) { g_vmm.unmap(va, size); }
void vmm_release(VmmHandle h) { g_vmm.release(h); }
void vmm_address_free(std::uint64_t va, std::size_t size) { g_vmm.address_free(va, size); }

#else  // HIP
// Read-only inputs: whether hipMemSetAccess with hipMemAccessFlagsProtRead makes a kernel's write
// fault cannot be seen without an AMD GPU, and a line that said `inputs_read_only` without it
// would claim a defence that may not be there. So on HIP the inputs stay plain allocations
// (mutation caught by hashing / re-generation) and only the arena uses the API (ABI.md, "HIP").
constexpr bool kReadOnlyInputs = false;
// Whether a GPU can map memory into a reservation is not known until it is tried: the arena is
// opened only once one granule maps, so that where it cannot, in-process timing keeps plain
// allocations (as it always had on HIP) and replay mode fails its setup naming the call.
constexpr bool kProbeArenaMapping = true;
constexpr const char* kRuntime = "HIP";
constexpr const char* kReserveCall = "hipMemAddressReserve";
constexpr const char* kErrorType = "hipError_t";

bool vmm_load() { return true; }  // linked: a runtime without it fails the calls, not the load

hipMemAllocationProp device_prop(int dev) {
  hipMemAllocationProp prop{};
  prop.type = hipMemAllocationTypePinned;
  prop.location.type = hipMemLocationTypeDevice;
  prop.location.id = dev;
  return prop;
}

hipMemGenericAllocationHandle_t as_handle(VmmHandle h) {
  return reinterpret_cast<hipMemGenericAllocationHandle_t>(static_cast<std::uintptr_t>(h));
}

std::size_t vmm_granularity(int dev) {
  const hipMemAllocationProp prop = device_prop(dev);
  std::size_t gran = 0;
  if (hipMemGetAllocationGranularity(&gran, &prop, hipMemAllocationGranularityMinimum) != hipSuccess)
    return 0;
  return gran;
}
bool vmm_create(VmmHandle* h, std::size_t size, int dev) {
  const hipMemAllocationProp prop = device_prop(dev);
  hipMemGenericAllocationHandle_t made{};
  if (hipMemCreate(&made, size, &prop, 0) != hipSuccess) return false;
  *h = reinterpret_cast<std::uintptr_t>(made);
  return true;
}
int vmm_reserve(std::uint64_t* va, std::size_t size, std::size_t align, std::uint64_t fixed) {
  void* got = nullptr;
  const hipError_t r = hipMemAddressReserve(&got, size, align, as_ptr(fixed), 0);
  *va = reinterpret_cast<std::uintptr_t>(got);
  return static_cast<int>(r);
}
bool vmm_map(std::uint64_t va, std::size_t size, VmmHandle h) {
  return hipMemMap(as_ptr(va), size, 0, as_handle(h), 0) == hipSuccess;
}
bool vmm_set_access(std::uint64_t va, std::size_t size, bool read_only) {
  int dev = 0;
  (void)gpuGetDevice(&dev);
  hipMemAccessDesc d{};
  d.location.type = hipMemLocationTypeDevice;
  d.location.id = dev;
  d.flags = read_only ? hipMemAccessFlagsProtRead : hipMemAccessFlagsProtReadWrite;
  return hipMemSetAccess(as_ptr(va), size, &d, 1) == hipSuccess;
}
void vmm_unmap(std::uint64_t va, std::size_t size) { (void)hipMemUnmap(as_ptr(va), size); }
void vmm_release(VmmHandle h) { (void)hipMemRelease(as_handle(h)); }
void vmm_address_free(std::uint64_t va, std::size_t size) { (void)hipMemAddressFree(as_ptr(va), size); }
#endif

// ---- What both uses share ----

struct Mapping {
  std::uint64_t ptr = 0;
  std::size_t size = 0;
  VmmHandle handle = 0;
};
std::vector<Mapping> g_mappings;  // the inputs whose access flips around a launch
bool g_read_only = false;

// The current device and its mapping granularity; false where either cannot be had.
bool backing(int* dev, std::size_t* gran) {
  if (gpuGetDevice(dev) != gpuSuccess) return false;
  *gran = vmm_granularity(*dev);
  return *gran != 0;
}

// Physical memory for m->size bytes (a multiple of `gran`) mapped read-write at m->ptr, or at
// an address reserved here when m->ptr is 0. False, with nothing left behind, where the driver
// refuses.
bool map_backed(Mapping* m, int dev, std::size_t gran) {
  const bool own_address = m->ptr == 0;
  if (!vmm_create(&m->handle, m->size, dev)) return false;
  if (own_address && vmm_reserve(&m->ptr, m->size, gran, 0) != 0) {
    vmm_release(m->handle);
    return false;
  }
  if (!vmm_map(m->ptr, m->size, m->handle) || !vmm_set_access(m->ptr, m->size, false)) {
    vmm_unmap(m->ptr, m->size);
    vmm_release(m->handle);
    if (own_address) vmm_address_free(m->ptr, m->size);
    return false;
  }
  return true;
}

void unmap_backed(const Mapping& m, bool own_address) {
  (void)gpuDeviceSynchronize();
  vmm_unmap(m.ptr, m.size);
  vmm_release(m.handle);
  if (own_address) vmm_address_free(m.ptr, m.size);
}

// A buffer of `bytes`, rounded up to the current device's granularity, mapped read-write at
// the address `place(&m)` gives m.ptr for m.size (left 0: one reserved here), or nullopt where
// `place` finds no room or the device or the driver refuses (nothing left behind).
template <class Place>
std::optional<Mapping> map_buffer(std::size_t bytes, Place place) {
  int dev = 0;
  std::size_t gran = 0;
  if (!backing(&dev, &gran)) return std::nullopt;
  Mapping m;
  m.size = (bytes + gran - 1) / gran * gran;
  if (!place(&m) || !map_backed(&m, dev, gran)) return std::nullopt;
  return m;
}

}  // namespace

void* protected_alloc(std::size_t bytes) {
  if (!kReadOnlyInputs || !bytes || !vmm_load()) return nullptr;
  int dev = 0;
  if (gpuGetDevice(&dev) != gpuSuccess) return nullptr;
  (void)gpuFree(nullptr);  // the primary context exists before driver calls
  const auto m = map_buffer(bytes, [](Mapping*) { return true; });
  if (!m) return nullptr;
  g_mappings.push_back(*m);
  return as_ptr(m->ptr);
}

bool protected_free(void* p) {
  for (std::size_t i = 0; i < g_mappings.size(); ++i) {
    if (as_ptr(g_mappings[i].ptr) != p) continue;
    const Mapping m = g_mappings[i];
    g_mappings.erase(g_mappings.begin() + i);
    unmap_backed(m, /*own_address=*/true);
    return true;
  }
  return false;
}

bool inputs_read_only(bool read_only) {
  if (g_mappings.empty()) return false;
  if (read_only == g_read_only) return true;
  for (const auto& m : g_mappings)
    if (!vmm_set_access(m.ptr, m.size, read_only)) return false;
  g_read_only = read_only;
  return true;
}

bool inputs_protected() { return !g_mappings.empty(); }

bool inputs_are_read_only_now() { return g_read_only; }

// ---- The fixed-address arena (replay mode) ----
namespace {
struct Arena {
  std::uint64_t base = 0;
  std::uint64_t used = 0;
  struct Live {
    Mapping m;
    bool protect;
    FixedBuffer b;
  };
  std::vector<Live> live;
};
Arena g_arena;
}  // namespace

bool fixed_arena_open(std::uint64_t base, std::string* why) {
  if (g_arena.base) return true;
  if (!vmm_load()) {
    *why = std::string("replay mode needs the ") + kRuntime +
           " virtual memory management API (" + kReserveCall + "), which this driver does not offer";
    return false;
  }
  (void)gpuFree(nullptr);
  std::uint64_t got = 0;
  const int r = vmm_reserve(&got, kArenaBytes, 2u << 20, base);
  if (r != 0 || got != base) {
    if (r == 0) vmm_address_free(got, kArenaBytes);
    char buf[200];
    std::snprintf(buf, sizeof buf, "could not reserve the replay arena at 0x%llx (got 0x%llx, "
                  "%s %d): pass another --va-base", (unsigned long long)base,
                  (unsigned long long)got, kErrorType, r);
    *why = buf;
    return false;
  }
  if (kProbeArenaMapping) {
    int dev = 0;
    std::size_t gran = 0;
    Mapping probe;
    probe.ptr = got;
    bool mapped = backing(&dev, &gran);
    if (mapped) {
      probe.size = gran;
      mapped = map_backed(&probe, dev, gran);
    }
    if (mapped) unmap_backed(probe, /*own_address=*/false);
    if (!mapped) {
      vmm_address_free(got, kArenaBytes);
      *why = std::string("replay mode maps its buffers at fixed addresses, and this ") +
             kRuntime + " GPU could not map memory into the reserved range (a create, map or "
             "set-access call of the virtual memory API failed): ask for in-process timing";
      return false;
    }
  }
  g_arena.base = got;
  return true;
}

bool fixed_arena_active() { return g_arena.base != 0; }
std::uint64_t fixed_arena_base() { return g_arena.base; }
std::uint64_t fixed_arena_end() { return g_arena.base ? g_arena.base + kArenaBytes : 0; }

std::vector<FixedBuffer> fixed_buffers() {
  std::vector<FixedBuffer> out;
  for (const auto& l : g_arena.live) out.push_back(l.b);
  return out;
}

std::vector<FixedBuffer> fixed_input_buffers() {
  std::vector<FixedBuffer> out;
  for (const auto& l : g_arena.live)
    if (l.protect) out.push_back(l.b);
  return out;
}

namespace {
// One read per 64 KiB of a buffer, kept alive by a store no read ever makes.
__global__ void touch_pages(const unsigned int* p, std::uint64_t words, unsigned int* sink) {
  constexpr std::uint64_t kStrideWords = (64u << 10) / 4;
  const std::uint64_t i = (static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kStrideWords;
  if (i < words && p[i] == 0x9e3779b9u && p[words - 1] == 0x7f4a7c15u) *sink = 1;
}
}  // namespace

void warm_translations() {
  // Changing a mapping's access (inputs_read_only) drops the GPU's cached address translations,
  // so a launch right after it pays a page walk on its first touch of every page: about 1 % of
  // an 18 us attention on an H200, a cost no kernel has in a model, where its tensors stay
  // mapped. One read per 64 KiB of every buffer the launch may use puts them back, outside the
  // timed window and before the L2 flush (ColdTimer::poison_and_flush), which then evicts what
  // its own pages displace, as it does in-process, and empties the L2 of these reads.
  static DeviceBuffer* sink = new DeviceBuffer(4);
  gpuStream_t hs = harness_stream();
  auto touch = [&](std::uint64_t va, std::uint64_t bytes) {
    const std::uint64_t words = bytes / 4;
    if (!words) return;
    const std::uint64_t pages = (words + (16u << 10) - 1) / (16u << 10);
    touch_pages<<<static_cast<unsigned>((pages + 127) / 128), 128, 0, hs>>>(
        reinterpret_cast<const unsigned int*>(as_ptr(va)), words, static_cast<unsigned int*>(sink->get()));
  };
  for (const auto& l : g_arena.live) touch(l.b.va, l.b.bytes);
  for (const auto& m : g_mappings) touch(m.ptr, m.size);
  KFLEET_GPU_CHECK(gpuGetLastError());
  KFLEET_GPU_CHECK(gpuStreamSynchronize(hs));
}

void* fixed_alloc(std::size_t bytes, bool protect, const std::string& name) {
  if (!g_arena.base || !bytes) return nullptr;
  const auto m = map_buffer(bytes, [](Mapping* next) {  // the arena's next free address
    if (g_arena.used + next->size > kArenaBytes) return false;
    next->ptr = g_arena.base + g_arena.used;
    return true;
  });
  if (!m) return nullptr;
  g_arena.used += m->size;
  g_arena.live.push_back({*m, protect, FixedBuffer{name, m->ptr, bytes}});
  if (protect && kReadOnlyInputs) g_mappings.push_back(*m);
  return as_ptr(m->ptr);
}

bool fixed_free(void* p) {
  for (std::size_t i = 0; i < g_arena.live.size(); ++i) {
    if (as_ptr(g_arena.live[i].m.ptr) != p) continue;
    const Mapping m = g_arena.live[i].m;
    g_arena.live.erase(g_arena.live.begin() + i);
    for (std::size_t j = 0; j < g_mappings.size(); ++j)
      if (g_mappings[j].ptr == m.ptr) g_mappings.erase(g_mappings.begin() + j);
    unmap_backed(m, /*own_address=*/false);  // the address stays the arena's
    // Buffers are freed with their case; the next case maps from the start again, so every
    // process that builds the same cases in the same order maps the same addresses.
    if (g_arena.live.empty()) g_arena.used = 0;
    return true;
  }
  return false;
}

}  // namespace kfleet::harness
