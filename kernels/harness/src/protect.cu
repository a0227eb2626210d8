// Read-only inputs while a kernel runs (ABI.md: a kernel never writes its inputs, not even to
// restore them afterwards). On CUDA the inputs are mapped with the virtual memory management API
// (cuMemCreate / cuMemMap, resolved from libcuda with dlopen: no link-time dependency) and their
// access is set to read-only around every launch, so a write faults at once, whatever the
// kernel does afterwards. Where that API cannot be had the inputs are plain allocations and the
// lines say `"inputs_read_only":false`; mutation is then caught by hashing / re-generation only.
#include <cstdio>
#include <cstring>
#include <vector>

#include "harness.hpp"

#if defined(KFLEET_CUDA)
#include <cuda.h>
#include <dlfcn.h>
#endif

namespace kfleet::harness {

#if defined(KFLEET_CUDA)
namespace {

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

struct Mapping {
  CUdeviceptr ptr = 0;
  std::size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
};
std::vector<Mapping> g_mappings;
bool g_read_only = false;

bool load_vmm() {
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

CUmemAccessDesc access(bool read_only) {
  int dev = 0;
  cudaGetDevice(&dev);
  CUmemAccessDesc d{};
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = dev;
  d.flags = read_only ? CU_MEM_ACCESS_FLAGS_PROT_READ : CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return d;
}

}  // namespace

void* protected_alloc(std::size_t bytes) {
  if (!bytes || !load_vmm()) return nullptr;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return nullptr;
  cudaFree(nullptr);  // the primary context exists before driver calls
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  std::size_t gran = 0;
  if (g_vmm.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || !gran)
    return nullptr;
  Mapping m;
  m.size = (bytes + gran - 1) / gran * gran;
  if (g_vmm.create(&m.handle, m.size, &prop, 0) != CUDA_SUCCESS) return nullptr;
  if (g_vmm.reserve(&m.ptr, m.size, gran, 0, 0) != CUDA_SUCCESS) {
    g_vmm.release(m.handle);
    return nullptr;
  }
  const CUmemAccessDesc rw = access(false);
  if (g_vmm.map(m.ptr, m.size, 0, m.handle, 0) != CUDA_SUCCESS ||
      g_vmm.set_access(m.ptr, m.size, &rw, 1) != CUDA_SUCCESS) {
    g_vmm.unmap(m.ptr, m.size);
    g_vmm.release(m.handle);
    g_vmm.address_free(m.ptr, m.size);
    return nullptr;
  }
  g_mappings.push_back(m);
  return reinterpret_cast<void*>(m.ptr);
}

bool protected_free(void* p) {
  for (std::size_t i = 0; i < g_mappings.size(); ++i) {
    if (reinterpret_cast<void*>(g_mappings[i].ptr) != p) continue;
    const Mapping m = g_mappings[i];
    g_mappings.erase(g_mappings.begin() + i);
    cudaDeviceSynchronize();
    g_vmm.unmap(m.ptr, m.size);
    g_vmm.release(m.handle);
    g_vmm.address_free(m.ptr, m.size);
    return true;
  }
  return false;
}

bool inputs_read_only(bool read_only) {
  if (g_mappings.empty()) return false;
  if (read_only == g_read_only) return true;
  const CUmemAccessDesc d = access(read_only);
  for (const auto& m : g_mappings)
    if (g_vmm.set_access(m.ptr, m.size, &d, 1) != CUDA_SUCCESS) return false;
  g_read_only = read_only;
  return true;
}

bool inputs_protected() { return !g_mappings.empty(); }
bool inputs_are_read_only_now() { return g_read_only; }

// ---- The fixed-address arena (replay mode) ----
namespace {
struct Arena {
  CUdeviceptr base = 0;
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
  if (!load_vmm()) {
    *why = "replay mode needs the CUDA virtual memory management API (cuMemAddressReserve), "
           "which this driver does not offer";
    return false;
  }
  cudaFree(nullptr);
  CUdeviceptr got = 0;
  const CUresult r = g_vmm.reserve(&got, kArenaBytes, 2u << 20, static_cast<CUdeviceptr>(base), 0);
  if (r != CUDA_SUCCESS || got != base) {
    if (r == CUDA_SUCCESS) g_vmm.address_free(got, kArenaBytes);
    char buf[200];
    std::snprintf(buf, sizeof buf, "could not reserve the replay arena at 0x%llx (got 0x%llx, "
                  "CUresult %d): pass another --va-base", (unsigned long long)base,
                  (unsigned long long)got, (int)r);
    *why = buf;
    return false;
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

void* fixed_alloc(std::size_t bytes, bool protect, const std::string& name) {
  if (!g_arena.base || !bytes) return nullptr;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return nullptr;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  std::size_t gran = 0;
  if (g_vmm.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || !gran)
    return nullptr;
  Mapping m;
  m.size = (bytes + gran - 1) / gran * gran;
  if (g_arena.used + m.size > kArenaBytes) return nullptr;
  m.ptr = g_arena.base + g_arena.used;
  if (g_vmm.create(&m.handle, m.size, &prop, 0) != CUDA_SUCCESS) return nullptr;
  const CUmemAccessDesc rw = access(false);
  if (g_vmm.map(m.ptr, m.size, 0, m.handle, 0) != CUDA_SUCCESS ||
      g_vmm.set_access(m.ptr, m.size, &rw, 1) != CUDA_SUCCESS) {
    g_vmm.unmap(m.ptr, m.size);
    g_vmm.release(m.handle);
    return nullptr;
  }
  g_arena.used += m.size;
  g_arena.live.push_back({m, protect, FixedBuffer{name, m.ptr, bytes}});
  if (protect) g_mappings.push_back(m);
  return reinterpret_cast<void*>(m.ptr);
}

bool fixed_free(void* p) {
  for (std::size_t i = 0; i < g_arena.live.size(); ++i) {
    if (reinterpret_cast<void*>(g_arena.live[i].m.ptr) != p) continue;
    const Mapping m = g_arena.live[i].m;
    g_arena.live.erase(g_arena.live.begin() + i);
    for (std::size_t j = 0; j < g_mappings.size(); ++j)
      if (g_mappings[j].ptr == m.ptr) g_mappings.erase(g_mappings.begin() + j);
    cudaDeviceSynchronize();
    g_vmm.unmap(m.ptr, m.size);
    g_vmm.release(m.handle);
    // Buffers are freed with their case; the next case maps from the start again, so every
    // process that builds the same cases in the same order maps the same addresses.
    if (g_arena.live.empty()) g_arena.used = 0;
    return true;
  }
  return false;
}

#else  // HIP: plain allocations; mutation is caught by hashing / re-generation

void* protected_alloc(std::size_t) { return nullptr; }
bool protected_free(void*) { return false; }
bool inputs_read_only(bool) { return false; }
bool inputs_protected() { return false; }
bool inputs_are_read_only_now() { return false; }

// HIP: hipMemAddressReserve / hipMemCreate / hipMemMap are the same design (ABI.md, "HIP"), not
// built here: without an AMD GPU to run it on, replay mode on HIP is refused, plainly.
bool fixed_arena_open(std::uint64_t, std::string* why) {
  *why = "replay mode is not built for HIP yet (ABI.md, \"HIP\"): ask for in-process timing";
  return false;
}
bool fixed_arena_active() { return false; }
std::uint64_t fixed_arena_base() { return 0; }
std::uint64_t fixed_arena_end() { return 0; }
std::vector<FixedBuffer> fixed_buffers() { return {}; }
void* fixed_alloc(std::size_t, bool, const std::string&) { return nullptr; }
bool fixed_free(void*) { return false; }

#endif

}  // namespace kfleet::harness
