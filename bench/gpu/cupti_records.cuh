// CUPTI's kernel records in bench/gpu's programs (graph_edge_gap.cu and replay_shapes.cu through
// edge_common.cuh, tracer_truth.cu): the library loaded by path, kinds enabled as kfleet-measure
// enables them, each kernel record's start, end and carve-out kept. Each program is one
// translation unit, so these definitions are each program's own.
#pragma once
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#ifndef __CUDA_ARCH__
namespace {

// CUPTI's concurrent-kernel activity on, as the measuring process has it while it times, loaded
// from `lib` by path. Its kernel records (start@16, end@24 and the shared-memory carve-out the
// driver executed with @140: the offsets kfleet-measure reads) are kept, so each variant also gets
// CUPTI's own span, gaps and carve-outs beside the events' (in replay, the job's kernels in a graph
// of several read a carve-out of 0, kfleet-measure's own 32 KiB: is that the graph, or replay?).
struct Cupti {
  int (*next)(std::uint8_t*, std::size_t, void**) = nullptr;
  int (*flush)(std::uint32_t) = nullptr;
  std::mutex mu;  // CUPTI may hand buffers back on a thread of its own
  struct Record { std::uint64_t start, end; std::uint32_t carveout; };
  std::vector<Record> kernels;
};
Cupti g_cupti;
bool g_cupti_all = false;  // replay_shapes --cupti-all: memcpy and memset records on too
std::vector<int> g_cupti_extra_kinds;  // further activity kinds enabled (their records dropped)

bool trace_with_cupti(const char* lib) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) { std::fprintf(stderr, "cannot load %s: %s\n", lib, dlerror()); return false; }
  using Request = void (*)(std::uint8_t**, std::size_t*, std::size_t*);
  using Complete = void (*)(void*, std::uint32_t, std::uint8_t*, std::size_t, std::size_t);
  auto reg = reinterpret_cast<int (*)(Request, Complete)>(dlsym(h, "cuptiActivityRegisterCallbacks"));
  auto enable = reinterpret_cast<int (*)(int)>(dlsym(h, "cuptiActivityEnable"));
  g_cupti.next = reinterpret_cast<int (*)(std::uint8_t*, std::size_t, void**)>(dlsym(h, "cuptiActivityGetNextRecord"));
  g_cupti.flush = reinterpret_cast<int (*)(std::uint32_t)>(dlsym(h, "cuptiActivityFlushAll"));
  if (!reg || !enable || !g_cupti.next || !g_cupti.flush) return false;
  Request req = [](std::uint8_t** b, std::size_t* size, std::size_t* max) {
    *size = 8 << 20;
    *b = static_cast<std::uint8_t*>(std::aligned_alloc(8, *size));
    *max = 0;
  };
  Complete done = [](void*, std::uint32_t, std::uint8_t* b, std::size_t, std::size_t valid) {
    void* rec = nullptr;
    while (g_cupti.next(b, valid, &rec) == 0) {
      const auto* r = static_cast<const std::uint8_t*>(rec);
      std::uint32_t kind = 0;
      std::uint64_t start = 0, end = 0;
      std::uint32_t carveout = 0;
      std::memcpy(&kind, r, 4);
      std::memcpy(&start, r + 16, 8);
      std::memcpy(&end, r + 24, 8);
      std::memcpy(&carveout, r + 140, 4);
      if (kind == 10) {
        std::lock_guard<std::mutex> lock(g_cupti.mu);
        g_cupti.kernels.push_back({start, end, carveout});
      }
    }
    std::free(b);
  };
  constexpr int kConcurrentKernel = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
  if (reg(req, done) != 0 || enable(kConcurrentKernel) != 0) return false;
  // g_cupti_all: memcpy (1) and memset (2) records too, as kfleet-measure's tracer enables them
  // (their records are read and dropped here).
  if (g_cupti_all)
    for (int kind : {1, 2})
      if (enable(kind) != 0) return false;
  for (int kind : g_cupti_extra_kinds)  // tracer_truth --kinds profiler: torch.profiler's further kinds
    if (enable(kind) != 0) return false;
  return true;
}

}  // namespace
#endif
