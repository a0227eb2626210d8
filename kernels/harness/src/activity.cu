// GPU activity tracing for the benchmark (PROTOCOL.md, "What a sample is"): CUPTI's activity
// API on CUDA, loaded with dlopen from the toolkit's usual places so the harness has no
// link-time dependency on it. Records kernels (concurrent-kernel records: any stream, graphs,
// other contexts of this process), memcpys and memsets. Where CUPTI cannot be loaded the caller
// is told why, and the result says its timing is events only (never a silent fallback).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "harness.hpp"

#if defined(KFLEET_CUDA)
#include <dlfcn.h>
#endif

namespace kfleet::harness {

#if defined(KFLEET_CUDA)
namespace {

// The subset of cupti.h the harness uses (values and layouts from cupti_activity.h; the record
// fields read here sit at the same offsets in every record version since CUDA 11).
using CUptiResult = int;
constexpr int kKindMemcpy = 1, kKindMemset = 2, kKindConcurrentKernel = 10;
constexpr std::uint32_t kFlushForced = 1;
using RequestFn = void (*)(std::uint8_t**, std::size_t*, std::size_t*);
using CompleteFn = void (*)(void*, std::uint32_t, std::uint8_t*, std::size_t, std::size_t);

struct Cupti {
  CUptiResult (*enable)(int) = nullptr;
  CUptiResult (*register_callbacks)(RequestFn, CompleteFn) = nullptr;
  CUptiResult (*next_record)(std::uint8_t*, std::size_t, void**) = nullptr;
  CUptiResult (*flush_all)(std::uint32_t) = nullptr;
  CUptiResult (*timestamp)(std::uint64_t*) = nullptr;
  CUptiResult (*result_string)(CUptiResult, const char**) = nullptr;
};
Cupti g_cupti;
std::mutex g_mu;
std::vector<ActivityRecord> g_records;

constexpr std::size_t kBufferBytes = 8u << 20;

template <class T>
T field(const std::uint8_t* rec, std::size_t offset) {
  T v;
  std::memcpy(&v, rec + offset, sizeof v);
  return v;
}

// --kernel-configs: what the driver ran each kernel with, as its records say (CUpti_ActivityKernel
// 5 to 10 keep these fields at these offsets): the shared memory carve-out it executed with and
// whether one was asked for, registers, static and dynamic shared memory, local memory per
// thread, grid and block. Two runs of one kernel that differ here ran differently configured.
struct KernelConfig {
  std::string name;
  int regs = 0, carveout_requested = -1, shared_static = 0, shared_dynamic = 0;
  std::uint32_t shared_executed = 0, local_per_thread = 0;
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  long long count = 0;
  bool same(const KernelConfig& o) const {
    return name == o.name && regs == o.regs && carveout_requested == o.carveout_requested &&
           shared_static == o.shared_static && shared_dynamic == o.shared_dynamic &&
           shared_executed == o.shared_executed && local_per_thread == o.local_per_thread &&
           std::equal(grid, grid + 3, o.grid) && std::equal(block, block + 3, o.block);
  }
};
std::atomic<bool> g_count_configs{false};  // set on the main thread, read in CUPTI's callback
std::vector<KernelConfig> g_configs;

KernelConfig config_of(const std::uint8_t* r) {
  KernelConfig c;
  const char* name = field<const char*>(r, 104);
  c.name = name ? name : "";
  c.regs = field<std::uint16_t>(r, 6);
  if (field<std::uint8_t>(r, 137)) c.carveout_requested = field<std::uint8_t>(r, 138);
  c.shared_executed = field<std::uint32_t>(r, 140);
  c.shared_static = field<std::int32_t>(r, 76);
  c.shared_dynamic = field<std::int32_t>(r, 80);
  c.local_per_thread = field<std::uint32_t>(r, 84);
  for (int i = 0; i < 3; ++i) {
    c.grid[i] = field<std::int32_t>(r, 52 + 4 * i);
    c.block[i] = field<std::int32_t>(r, 64 + 4 * i);
  }
  return c;
}

void buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void buffer_completed(void*, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  void* rec = nullptr;
  std::vector<ActivityRecord> got;
  while (g_cupti.next_record(buffer, valid, &rec) == 0) {
    const auto* r = static_cast<const std::uint8_t*>(rec);
    const auto kind = field<std::uint32_t>(r, 0);
    ActivityRecord a;
    // kernel: kind, cacheConfig, sharedMemoryConfig, registersPerThread, 2 x partitioned cache
    // config, then start@16 end@24 completed@32 deviceId@40 contextId@44 streamId@48.
    // memcpy / memset: kind, 4 bytes of kinds/value, bytes@8, start@16 end@24 deviceId@32
    // contextId@36 streamId@40.
    if (kind == kKindConcurrentKernel || kind == 3) {
      a.kind = ActivityRecord::kernel_kind;
      a.stream = field<std::uint32_t>(r, 48);
      if (g_count_configs && kind == kKindConcurrentKernel) {
        KernelConfig c = config_of(r);
        std::lock_guard<std::mutex> lock(g_mu);
        auto it = std::find_if(g_configs.begin(), g_configs.end(), [&](const KernelConfig& k) { return k.same(c); });
        if (it == g_configs.end()) it = g_configs.insert(g_configs.end(), c);
        ++it->count;
      }
    } else if (kind == kKindMemcpy || kind == 22) {
      a.kind = ActivityRecord::memcpy_kind;
      a.stream = field<std::uint32_t>(r, 40);
    } else if (kind == kKindMemset) {
      a.kind = ActivityRecord::memset_kind;
      a.stream = field<std::uint32_t>(r, 40);
    } else {
      continue;
    }
    a.start = field<std::uint64_t>(r, 16);
    a.end = field<std::uint64_t>(r, 24);
    got.push_back(a);
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mu);
  g_records.insert(g_records.end(), got.begin(), got.end());
}

void* open_cupti(std::string* tried) {
  std::vector<std::string> names;
  if (const char* e = std::getenv("KFLEET_CUPTI_LIB")) names.push_back(e);
  std::vector<std::string> roots;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* e = std::getenv(env)) roots.push_back(e);
  roots.push_back("/usr/local/cuda");
  for (const auto& root : roots)
    for (const char* sub : {"/extras/CUPTI/lib64/", "/lib64/", "/targets/x86_64-linux/lib/",
                            "/targets/sbsa-linux/lib/"})
      for (const char* so : {"libcupti.so", "libcupti.so.13", "libcupti.so.12"})
        names.push_back(root + sub + so);
  for (const char* so : {"libcupti.so", "libcupti.so.13", "libcupti.so.12"}) names.push_back(so);
  for (const auto& n : names) {
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *tried = n;
      return h;
    }
  }
  *tried = "libcupti.so (looked in $KFLEET_CUPTI_LIB, $CUDA_HOME, /usr/local/cuda and the "
           "loader path)";
  return nullptr;
}

}  // namespace

ActivityTracer* ActivityTracer::start(std::string* why_not) {
  static ActivityTracer* tracer = nullptr;
  if (tracer) return tracer;
  std::string lib;
  void* h = open_cupti(&lib);
  if (!h) {
    *why_not = "CUPTI could not be loaded: no " + lib;
    return nullptr;
  }
  auto sym = [&](const char* name) { return dlsym(h, name); };
  g_cupti.enable = reinterpret_cast<CUptiResult (*)(int)>(sym("cuptiActivityEnable"));
  g_cupti.register_callbacks =
      reinterpret_cast<CUptiResult (*)(RequestFn, CompleteFn)>(sym("cuptiActivityRegisterCallbacks"));
  g_cupti.next_record = reinterpret_cast<CUptiResult (*)(std::uint8_t*, std::size_t, void**)>(
      sym("cuptiActivityGetNextRecord"));
  g_cupti.flush_all = reinterpret_cast<CUptiResult (*)(std::uint32_t)>(sym("cuptiActivityFlushAll"));
  g_cupti.timestamp = reinterpret_cast<CUptiResult (*)(std::uint64_t*)>(sym("cuptiGetTimestamp"));
  g_cupti.result_string =
      reinterpret_cast<CUptiResult (*)(CUptiResult, const char**)>(sym("cuptiGetResultString"));
  if (!g_cupti.enable || !g_cupti.register_callbacks || !g_cupti.next_record ||
      !g_cupti.flush_all || !g_cupti.timestamp) {
    *why_not = lib + " lacks the activity API functions";
    return nullptr;
  }
  auto check = [&](CUptiResult r, const char* what) {
    if (r == 0) return true;
    const char* s = nullptr;
    if (g_cupti.result_string) g_cupti.result_string(r, &s);
    *why_not = std::string(what) + " failed in " + lib + ": " + (s ? s : std::to_string(r));
    return false;
  };
  if (!check(g_cupti.register_callbacks(buffer_requested, buffer_completed),
             "cuptiActivityRegisterCallbacks"))
    return nullptr;
  for (int kind : {kKindConcurrentKernel, kKindMemcpy, kKindMemset})
    if (!check(g_cupti.enable(kind), "cuptiActivityEnable")) return nullptr;
  tracer = new ActivityTracer();  // never freed: CUPTI may call back until the process ends
  tracer->library_ = lib;
  // The harness's own stream, as CUPTI numbers it: one memset on it, then read its record.
  static DeviceBuffer* probe = new DeviceBuffer(256);
  KFLEET_GPU_CHECK(gpuMemsetAsync(probe->get(), 0, 256, harness_stream()));
  KFLEET_GPU_CHECK(gpuStreamSynchronize(harness_stream()));
  tracer->harness_stream_id_ = ~0u;
  for (const auto& r : tracer->flush())
    if (r.kind == ActivityRecord::memset_kind) tracer->harness_stream_id_ = r.stream;
  if (tracer->harness_stream_id_ == ~0u) {
    *why_not = "CUPTI loaded from " + lib + " but recorded no activity for a test memset";
    tracer = nullptr;
    return nullptr;
  }
  return tracer;
}

bool ActivityTracer::enable_hw_trace(std::string* why_not) {
  std::string lib;
  void* h = open_cupti(&lib);
  if (!h) {
    *why_not = "CUPTI could not be loaded: no " + lib;
    return false;
  }
  auto fn = reinterpret_cast<CUptiResult (*)(std::uint8_t)>(dlsym(h, "cuptiActivityEnableHWTrace"));
  if (!fn) {
    *why_not = lib + " has no cuptiActivityEnableHWTrace";
    return false;
  }
  // CUPTI asks for an initialised driver without a context (asked before cuInit, it answered
  // CUPTI_ERROR_NOT_INITIALIZED on an H200): cuInit makes none.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto cu_init = driver ? reinterpret_cast<int (*)(unsigned)>(dlsym(driver, "cuInit")) : nullptr;
  if (!cu_init || cu_init(0) != 0) {
    *why_not = "the CUDA driver (libcuda.so.1) could not be initialised";
    return false;
  }
  const CUptiResult r = fn(1);
  if (r == 0) return true;
  const char* s = nullptr;
  if (auto str = reinterpret_cast<CUptiResult (*)(CUptiResult, const char**)>(
          dlsym(h, "cuptiGetResultString")))
    str(r, &s);
  *why_not = "cuptiActivityEnableHWTrace failed in " + lib + ": " + (s ? s : std::to_string(r));
  return false;
}

std::uint64_t ActivityTracer::now() const {
  std::uint64_t t = 0;
  g_cupti.timestamp(&t);
  return t;
}

std::vector<ActivityRecord> ActivityTracer::flush() {
  g_cupti.flush_all(kFlushForced);
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<ActivityRecord> out;
  out.swap(g_records);
  return out;
}

void ActivityTracer::count_kernel_configs() {
  flush();  // what ran before is not counted
  g_count_configs = true;
}

std::string ActivityTracer::kernel_configs_json() const {
  g_cupti.flush_all(kFlushForced);
  std::lock_guard<std::mutex> lock(g_mu);
  std::string out = "[";
  auto dim = [](const int* d) {
    return "[" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + "]";
  };
  for (const auto& c : g_configs) {
    if (out.size() > 1) out += ",";
    out += "{\"name\":" + JsonLine::quote(c.name) + ",\"count\":" + std::to_string(c.count) +
           ",\"grid\":" + dim(c.grid) + ",\"block\":" + dim(c.block) + ",\"regs\":" + std::to_string(c.regs) +
           ",\"shared_static\":" + std::to_string(c.shared_static) +
           ",\"shared_dynamic\":" + std::to_string(c.shared_dynamic) +
           ",\"shared_executed\":" + std::to_string(c.shared_executed) +
           ",\"carveout_requested\":" + std::to_string(c.carveout_requested) +
           ",\"local_per_thread\":" + std::to_string(c.local_per_thread) + "}";
  }
  return out + "]";
}

#else  // HIP: no tracer yet (rocprofiler-sdk is not wired in); the result says so.

ActivityTracer* ActivityTracer::start(std::string* why_not) {
  *why_not = "this harness has no ROCm activity tracer (rocprofiler-sdk) yet";
  return nullptr;
}
bool ActivityTracer::enable_hw_trace(std::string* why_not) {
  *why_not = "this harness has no ROCm activity tracer";
  return false;
}
std::uint64_t ActivityTracer::now() const { return 0; }
std::vector<ActivityRecord> ActivityTracer::flush() { return {}; }
void ActivityTracer::count_kernel_configs() {}
std::string ActivityTracer::kernel_configs_json() const { return "[]"; }

#endif

}  // namespace kfleet::harness
