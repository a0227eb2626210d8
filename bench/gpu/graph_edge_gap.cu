// The time a CUDA graph adds between dependent kernels, by how the graph was made: captured from
// a stream (as torch's graphs are) or built node by node (cudaGraphAddKernelNode), with the
// kernel compiled in or loaded from a cubin as a library (as replay loads a job's device code),
// one library for every node or one each (replay loads each recorded module on its own), and
// one each with the kernel's max dynamic shared memory set to the value it had, and one each with
// its attributes asked (cudaFuncGetAttributes), as replay did before it asked only where needed.
// Every graph is a chain of --nodes launches of one copy kernel that takes 1 KiB of parameters,
// but the last four variants', which alternate it with another kernel (another copy; one staging
// through 16 KiB of static shared memory), compiled in and captured, or each from a library in a
// built graph: a torch chain's consecutive kernels differ. Each variant's median span (events
// around the graph launch, the GPU idle before each) is printed with its excess over the
// captured, compiled-in chain, per edge.
//   nvcc -std=c++17 -O3 -arch=sm_90a -cubin -o edge.cubin bench/gpu/graph_edge_gap.cu
//   nvcc -std=c++17 -O3 -arch=sm_90a -o graph_edge_gap bench/gpu/graph_edge_gap.cu
//   ./graph_edge_gap edge.cubin [--nodes 16] [--elems 4194304] [--runs 300] [--cupti LIB] [--only I]
//   ./graph_edge_gap --shapes launches.txt [--runs 300] [--cupti LIB [--cupti-all]]
//                    [--arena GIB [--flip]] [--big-smem] [--rest-ms MS]
//   ./graph_edge_gap --one-kernel --cupti LIB [--cupti-all] [--elems N] [--runs 300]
// --cupti-all: CUPTI's memcpy and memset records enabled beside its kernel records, as
// kfleet-measure's tracer has them (12-05: no gap in a process of its own, with or without).
// --cupti: with CUPTI's kernel tracing on (libcupti.so by path), as when kfleet-measure times;
// each variant then also prints CUPTI's median span and gap between kernels (its second pass).
// --only I: variant I alone (0 = captured, compiled in; the order printed), in a context where no
// other variant was loaded: on an H200 (2026-12-04) every library variant was as fast as the
// compiled-in chain until the max-smem variant had run, and 0.45 us per edge slower after it.
#include <cuda_runtime.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct Pad { unsigned char bytes[1024]; };  // what a TensorIterator kernel's offset calculator weighs

extern "C" __global__ void edge_copy(float* dst, const float* src, long n, Pad pad) {
  const long stride = static_cast<long>(gridDim.x) * blockDim.x;
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = src[i] * 1.0001f + pad.bytes[i & 7];
}

// Two other kernels of the same signature, for chains whose consecutive kernels differ (as a
// torch chain's do): another copy, and one that stages through static shared memory (so the SM's
// shared-memory configuration differs from the copies').
extern "C" __global__ void edge_scale(float* dst, const float* src, long n, Pad pad) {
  const long stride = static_cast<long>(gridDim.x) * blockDim.x;
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = src[i] * 0.9999f - pad.bytes[i & 15];
}
extern "C" __global__ void edge_smem(float* dst, const float* src, long n, Pad pad) {
  __shared__ float tile[4096];  // 16 KiB
  const long stride = static_cast<long>(gridDim.x) * blockDim.x;
  for (long base = static_cast<long>(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const long i = base + threadIdx.x;
    tile[threadIdx.x * 16 % 4096] = i < n ? src[i] : 0.f;
    __syncthreads();
    if (i < n) dst[i] = tile[threadIdx.x * 16 % 4096] * 1.0001f + pad.bytes[i & 7];
    __syncthreads();
  }
}

// --shapes: an empty kernel standing in, in a clean process, for each kernel of a replayed graph
// (kfleet-measure --replay-kernels builtin runs the same in the measuring process).
extern "C" __global__ void edge_idle() {}

// --flip's warm-up (protect.cu's touch_pages) and --big-smem's kernel.
extern "C" __global__ void warm_pages(const unsigned int* p, unsigned long long words, unsigned int* sink) {
  const unsigned long long i = (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) * (16u << 10);
  if (i < words && p[i] == 0x9e3779b9u) *sink = 1;
}
extern "C" __global__ void big_smem_kernel(float* out) {
  extern __shared__ float tile[];
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = tile[blockDim.x - 1];
}

#ifndef __CUDA_ARCH__
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e)); std::exit(2); }
}
#define CK(x) check((x), #x)

struct Chain {
  int nodes = 16;
  long elems = 1 << 22;
  int runs = 300;
  float* a = nullptr;
  float* b = nullptr;
  Pad pad{};
  dim3 grid{1056}, block{256};
};

// Kernel parameters of node i: ping-pong between a and b so each node reads what the last wrote.
struct Args {
  float* dst; const float* src; long n; Pad pad;
  void* ptrs[4];
  void bind() { ptrs[0] = &dst; ptrs[1] = &src; ptrs[2] = &n; ptrs[3] = &pad; }
};

std::vector<Args> args_of(const Chain& c) {
  std::vector<Args> v(c.nodes);
  for (int i = 0; i < c.nodes; ++i) {
    v[i].dst = i % 2 ? c.a : c.b;
    v[i].src = i % 2 ? c.b : c.a;
    v[i].n = c.elems;
    v[i].pad = c.pad;
    v[i].bind();
  }
  return v;
}

// func(i): the kernel of node i, as a runtime handle (a __global__ address or a cudaKernel_t).
template <class F>
cudaGraphExec_t captured(const Chain& c, F func, cudaStream_t s) {
  std::vector<Args> args = args_of(c);
  cudaGraph_t g{};
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < c.nodes; ++i) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = c.grid, cfg.blockDim = c.block, cfg.stream = s;
    CK(cudaLaunchKernelExC(&cfg, func(i), args[i].ptrs));
  }
  CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t e{};
  CK(cudaGraphInstantiate(&e, g));
  CK(cudaGraphDestroy(g));
  return e;
}

// A chain of `nodes` kernel nodes built one by one (cudaGraphAddKernelNode), node i as fill(i, kp)
// sets it, instantiated.
cudaGraphExec_t built_chain(int nodes, const std::function<void(int, cudaKernelNodeParams&)>& fill) {
  cudaGraph_t g{};
  CK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t last{};
  for (int i = 0; i < nodes; ++i) {
    cudaKernelNodeParams kp{};
    fill(i, kp);
    cudaGraphNode_t n{};
    CK(cudaGraphAddKernelNode(&n, g, i ? &last : nullptr, i ? 1 : 0, &kp));
    last = n;
  }
  cudaGraphExec_t e{};
  CK(cudaGraphInstantiate(&e, g));
  CK(cudaGraphDestroy(g));
  return e;
}

template <class F>
cudaGraphExec_t built(const Chain& c, F func) {
  std::vector<Args> args = args_of(c);
  return built_chain(c.nodes, [&](int i, cudaKernelNodeParams& kp) {
    kp.func = const_cast<void*>(func(i));
    kp.gridDim = c.grid, kp.blockDim = c.block;
    kp.kernelParams = args[i].ptrs;
  });
}

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
bool g_cupti_all = false;
bool g_flip_warmups = false;  // the records to read hold one warm-up kernel before each launch

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
  // --cupti-all: memcpy (1) and memset (2) records too, as kfleet-measure's tracer enables them
  // (their records are read and dropped here).
  if (g_cupti_all)
    for (int kind : {1, 2})
      if (enable(kind) != 0) return false;
  return true;
}

// CUPTI's view of the launches since the last call: the median span (first start to last end
// of each launch's `nodes` kernels), the median gap between consecutive kernels, in us, and the
// carve-outs the kernels executed with (bytes, each value once).
struct Seen {
  double span = 0, gap = 0;
  std::string carveouts;
};
Seen cupti_span_and_gap(int nodes) {
  g_cupti.flush(1);
  std::vector<Cupti::Record> k;
  {
    std::lock_guard<std::mutex> lock(g_cupti.mu);
    k.swap(g_cupti.kernels);
  }
  std::sort(k.begin(), k.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  if (g_flip_warmups) {  // --flip: each launch follows its warm-up kernel; drop those records
    std::vector<Cupti::Record> graph_only;
    for (std::size_t i = 0; i < k.size(); ++i)
      if (i % (static_cast<std::size_t>(nodes) + 1) != 0) graph_only.push_back(k[i]);
    k.swap(graph_only);
  }
  std::vector<double> spans, gaps;
  std::vector<std::uint32_t> carve;
  for (const auto& r : k)
    if (std::find(carve.begin(), carve.end(), r.carveout) == carve.end()) carve.push_back(r.carveout);
  for (std::size_t i = 0; i + nodes <= k.size(); i += nodes) {
    spans.push_back((k[i + nodes - 1].end - k[i].start) / 1000.0);
    for (int j = 1; j < nodes; ++j)
      gaps.push_back((static_cast<double>(k[i + j].start) - static_cast<double>(k[i + j - 1].end)) / 1000.0);
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  Seen seen{median(spans), median(gaps), {}};
  for (auto c : carve) seen.carveouts += (seen.carveouts.empty() ? "" : " ") + std::to_string(c);
  return seen;
}

// Median span in us of `runs` launches, each on an idle GPU (synchronized, then 200 us of rest).
double span_us(cudaGraphExec_t e, const Chain& c, cudaStream_t s) {
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  std::vector<float> ms;
  for (int r = 0; r < c.runs + 10; ++r) {
    CK(cudaStreamSynchronize(s));
    CK(cudaEventRecord(t0, s));
    CK(cudaGraphLaunch(e, s));
    CK(cudaEventRecord(t1, s));
    CK(cudaEventSynchronize(t1));
    float m = 0;
    CK(cudaEventElapsedTime(&m, t0, t1));
    if (r >= 10) ms.push_back(m);
  }
  CK(cudaEventDestroy(t0));
  CK(cudaEventDestroy(t1));
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2] * 1000.0;
}

// --arena GIB: the measuring process's address space around the graph: 1 TiB reserved at
// 0x600000000000 (the replay arena's) with GIB GiB mapped at its start (a torch recording's python
// scratch is about 1 GiB); --flip: that mapping flipped read-only before each timed
// launch and back after it, its translations warmed again as protect.cu does (the inputs'
// protection); --big-smem: a kernel with 200 KiB of dynamic shared memory run once first (on an
// H200 in 2026-12-04 library kernels' edges grew after one such). Driver calls through libcuda by
// dlopen, as the harness makes them.
struct Vmm {
  using Create = int (*)(unsigned long long*, std::size_t, const void*, unsigned long long);
  using Reserve = int (*)(unsigned long long*, std::size_t, std::size_t, unsigned long long, unsigned long long);
  using Map = int (*)(unsigned long long, std::size_t, std::size_t, unsigned long long, unsigned long long);
  using SetAccess = int (*)(unsigned long long, std::size_t, const void*, std::size_t);
  Create create = nullptr;
  Reserve reserve = nullptr;
  Map map = nullptr;
  SetAccess set_access = nullptr;
  unsigned long long base = 0;
  std::size_t mapped = 0;
};
Vmm g_vmm;
int g_arena_gib = 0;
bool g_flip = false, g_big_smem = false;
double g_rest_ms = 0;  // --rest-ms: the host's wait before each timed run's flush (as measured)

// CUmemAllocationProp / CUmemAccessDesc as the driver lays them out (cuda.h), without cuda.h.
struct AllocProp { int type, handle_types, loc_type, loc_id; void* win32; unsigned char compression, gpu_direct, usage, pad[5]; };
struct AccessDesc { int loc_type, loc_id; int flags; };

void open_arena() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) { std::fprintf(stderr, "--arena: cannot load libcuda.so.1: %s\n", dlerror()); std::exit(2); }
  g_vmm.create = reinterpret_cast<Vmm::Create>(dlsym(h, "cuMemCreate"));
  g_vmm.reserve = reinterpret_cast<Vmm::Reserve>(dlsym(h, "cuMemAddressReserve"));
  g_vmm.map = reinterpret_cast<Vmm::Map>(dlsym(h, "cuMemMap"));
  g_vmm.set_access = reinterpret_cast<Vmm::SetAccess>(dlsym(h, "cuMemSetAccess"));
  if (!g_vmm.create || !g_vmm.reserve || !g_vmm.map || !g_vmm.set_access) { std::fprintf(stderr, "--arena: no VMM API\n"); std::exit(2); }
  CK(cudaFree(nullptr));
  if (g_vmm.reserve(&g_vmm.base, 1ull << 40, 2u << 20, 0x600000000000ull, 0) != 0) { std::fprintf(stderr, "--arena: reserve failed\n"); std::exit(2); }
  AllocProp prop{};
  prop.type = 1;      // CU_MEM_ALLOCATION_TYPE_PINNED
  prop.loc_type = 1;  // CU_MEM_LOCATION_TYPE_DEVICE, device 0
  g_vmm.mapped = static_cast<std::size_t>(g_arena_gib) << 30;
  unsigned long long handle = 0;
  if (g_vmm.create(&handle, g_vmm.mapped, &prop, 0) != 0 || g_vmm.map(g_vmm.base, g_vmm.mapped, 0, handle, 0) != 0) {
    std::fprintf(stderr, "--arena: create or map of %d GiB failed\n", g_arena_gib);
    std::exit(2);
  }
  const AccessDesc rw{1, 0, 3};  // PROT_READWRITE
  if (g_vmm.set_access(g_vmm.base, g_vmm.mapped, &rw, 1) != 0) { std::fprintf(stderr, "--arena: set access failed\n"); std::exit(2); }
  CK(cudaMemset(reinterpret_cast<void*>(g_vmm.base), 0, g_vmm.mapped));
}

void flip(bool read_only, cudaStream_t hs) {
  const std::size_t bytes = g_vmm.mapped;  // the whole mapping, as protect.cu flips each input's
  const AccessDesc d{1, 0, read_only ? 1 : 3};
  if (g_vmm.set_access(g_vmm.base, bytes, &d, 1) != 0) { std::fprintf(stderr, "--flip: set access failed\n"); std::exit(2); }
  if (!read_only) return;
  static unsigned int* sink = [] { unsigned int* p = nullptr; CK(cudaMalloc(&p, 4)); return p; }();
  warm_pages<<<static_cast<unsigned>((bytes / (64u << 10) + 127) / 128), 128, 0, hs>>>(
      reinterpret_cast<const unsigned int*>(g_vmm.base), bytes / 4, sink);
  CK(cudaStreamSynchronize(hs));
}

// As kfleet-measure's ColdTimer times a launch: before it, 2x the L2 (at least 64 MiB) overwritten
// on a stream of the harness's own and the device synchronized; the events and the graph on the
// legacy NULL stream; the device synchronized from a thread spawned for the launch. Median span
// in us, as span_us.
double span_us_as_measured(cudaGraphExec_t e, const Chain& c) {
  static cudaStream_t hs = [] {
    cudaStream_t made{};
    CK(cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking));
    return made;
  }();
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  const std::size_t flush_bytes = std::max<std::size_t>(2 * static_cast<std::size_t>(l2), 64u << 20);
  void* flush = nullptr;
  CK(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  std::vector<float> ms;
  for (int r = 0; r < c.runs + 10; ++r) {
    if (g_rest_ms > 0)  // the replay's runs are about 3.5 ms apart (refresh, re-checks) before the flush
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(g_rest_ms * 1000)));
    CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes, hs));
    CK(cudaDeviceSynchronize());
    if (g_flip) flip(true, hs);
    CK(cudaEventRecord(t0, nullptr));
    CK(cudaGraphLaunch(e, nullptr));
    CK(cudaEventRecord(t1, nullptr));
    CK(std::async(std::launch::async, [] { return cudaDeviceSynchronize(); }).get());
    if (g_flip) flip(false, hs);
    float m = 0;
    CK(cudaEventElapsedTime(&m, t0, t1));
    if (r >= 10) ms.push_back(m);
  }
  CK(cudaEventDestroy(t0));
  CK(cudaEventDestroy(t1));
  CK(cudaFree(flush));
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2] * 1000.0;
}

// --shapes LIST: each kernel line of a kfleet launch list (kernel NAME grid[3] block[3] cluster[3]
// dynamic-shared-bytes ...) as a node of a chain of edge_idle, captured and built, under CUPTI
// when --cupti is given: whether a replayed graph's gaps between kernels come with its shapes
// (grids, blocks, dynamic shared memory) or with the process that replays it. Each graph is timed
// twice: on a stream of its own, each launch on an idle GPU (span_us), and as kfleet-measure
// times it (span_us_as_measured: the flush, the NULL stream, the synchronizing thread).
struct Shape { dim3 grid, block; unsigned smem; };
std::vector<Shape> shapes_of(const char* path) {
  std::vector<Shape> v;
  FILE* f = std::fopen(path, "r");
  if (!f) { std::perror(path); std::exit(2); }
  char line[1 << 16];
  while (std::fgets(line, sizeof line, f)) {
    char name[4096];
    unsigned g[3], b[3], cl[3], smem;
    if (std::sscanf(line, "kernel %4095s %u %u %u %u %u %u %u %u %u %u", name, &g[0], &g[1], &g[2], &b[0], &b[1],
                    &b[2], &cl[0], &cl[1], &cl[2], &smem) == 11)
      v.push_back({dim3(g[0], g[1], g[2]), dim3(b[0], b[1], b[2]), smem});
  }
  std::fclose(f);
  return v;
}

int run_shapes(const char* path, const char* cupti, int runs) {
  const std::vector<Shape> sh = shapes_of(path);
  if (g_arena_gib > 0) open_arena();
  if (g_flip && g_arena_gib <= 0) { std::fprintf(stderr, "--flip needs --arena\n"); return 2; }
  if (g_big_smem) {
    float* out = nullptr;
    CK(cudaMalloc(&out, 132 * sizeof(float)));
    CK(cudaFuncSetAttribute(reinterpret_cast<const void*>(big_smem_kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10));
    big_smem_kernel<<<132, 256, 200 << 10>>>(out);
    CK(cudaDeviceSynchronize());
  }
  std::printf("process: %s%s%s\n", g_arena_gib > 0 ? "arena mapped, " : "", g_flip ? "flip each run, " : "",
              g_big_smem ? "a 200 KiB shared-memory kernel run first" : "");
  if (sh.size() < 2) { std::fprintf(stderr, "%s: fewer than two kernel lines\n", path); return 2; }
  unsigned most = 0;  // the largest dynamic shared memory a node asks, allowed once
  for (const auto& x : sh) most = std::max(most, x.smem);
  if (most > 48u << 10)
    CK(cudaFuncSetAttribute(reinterpret_cast<const void*>(edge_idle), cudaFuncAttributeMaxDynamicSharedMemorySize,
                            static_cast<int>(most)));
  cudaStream_t s{};
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto make = [&](bool capture) {
    if (!capture)
      return built_chain(static_cast<int>(sh.size()), [&](int i, cudaKernelNodeParams& kp) {
        kp.func = reinterpret_cast<void*>(edge_idle);
        kp.gridDim = sh[i].grid, kp.blockDim = sh[i].block, kp.sharedMemBytes = sh[i].smem;
      });
    cudaGraph_t g{};
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (const auto& x : sh) edge_idle<<<x.grid, x.block, x.smem, s>>>();
    CK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t e{};
    CK(cudaGraphInstantiate(&e, g));
    CK(cudaGraphDestroy(g));
    return e;
  };
  Chain c;
  c.runs = runs;
  c.nodes = static_cast<int>(sh.size());
  for (bool as_measured : {false, true})
    for (bool capture : {true, false}) {
      cudaGraphExec_t e = make(capture);
      if (cupti) cupti_span_and_gap(c.nodes);  // what ran so far
      const double span = as_measured ? span_us_as_measured(e, c) : span_us(e, c, s);
      g_flip_warmups = as_measured && g_flip;
      std::printf("shapes of %s, %d kernels, %s, %s: events span %.3f us", path, c.nodes,
                  capture ? "captured" : "built", as_measured ? "as kfleet-measure times" : "own stream", span);
      if (cupti) {
        // The flush's memset is not a kernel record, so each launch is still `nodes` records.
        const Seen seen = cupti_span_and_gap(c.nodes);
        std::printf("; CUPTI: span %.3f us, median gap %+.3f us (%.3f us over %d edges), carve-outs %s", seen.span,
                    seen.gap, seen.gap * (c.nodes - 1), c.nodes - 1, seen.carveouts.c_str());
      }
      std::printf("\n");
      g_flip_warmups = false;
      CK(cudaGraphExecDestroy(e));
    }
  return 0;
}

// --one-kernel: one edge_copy of --elems floats, issued on a stream (as replay issues a one-kernel
// recording) and as a one-node captured graph (as torch's in-process run launches it), each
// launch on an idle GPU after a 2 x L2 flush; CUPTI's median kernel duration of each (--cupti
// required): whether the way a single kernel is launched moves the time CUPTI gives it.
int run_one_kernel(Chain c, cudaStream_t s) {
  Chain one = c;
  one.nodes = 1;
  std::vector<Args> args = args_of(one);
  cudaGraphExec_t g = captured(one, [](int) { return reinterpret_cast<const void*>(edge_copy); }, s);
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  const std::size_t flush_bytes = std::max<std::size_t>(2 * static_cast<std::size_t>(l2), 64u << 20);
  void* flush = nullptr;
  CK(cudaMalloc(&flush, flush_bytes));
  auto durations = [&](bool graph) {
    cupti_span_and_gap(1);  // what ran so far
    for (int r = 0; r < c.runs + 10; ++r) {
      CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes, s));
      CK(cudaDeviceSynchronize());
      if (graph) {
        CK(cudaGraphLaunch(g, s));
      } else {
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = one.grid, cfg.blockDim = one.block, cfg.stream = s;
        CK(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(edge_copy), args[0].ptrs));
      }
      CK(cudaDeviceSynchronize());
    }
    return cupti_span_and_gap(1).span;  // one kernel a launch: its duration
  };
  for (int pass = 0; pass < 2; ++pass) {
    const double st = durations(false), gr = durations(true);
    std::printf("one copy kernel of %ld floats, CUPTI%s, pass %d: on a stream %.3f us, a one-node graph %.3f us, "
                "ratio %.4f\n", c.elems, g_cupti_all ? " (kernels, memcpys, memsets)" : " (kernels)", pass + 1, st, gr,
                st / gr);
  }
  CK(cudaFree(flush));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || (!std::strcmp(argv[1], "--shapes") && argc < 3)) {
    std::printf("usage: graph_edge_gap CUBIN [--nodes N] [--elems N] [--runs N] [--cupti LIB] [--only I]\n"
                "       graph_edge_gap --shapes LAUNCH_LIST [--runs N] [--cupti LIB]\n"
                "       graph_edge_gap --one-kernel --cupti LIB [--elems N] [--runs N]\n"
                "--cupti-all (with --cupti): memcpy and memset records enabled too, as kfleet-measure has them\n"
                "--shapes with --arena GIB [--flip] [--big-smem] [--rest-ms MS]: the measuring process's address space,\n"
                "protection flip, a large shared-memory kernel and its rest between runs around the graph\n");
    return argc >= 2 && !std::strcmp(argv[1], "--help") ? 0 : 2;
  }
  Chain c;
  const char* cubin = argv[1];
  const char* cupti = nullptr;
  int only = -1;
  const bool one_kernel = !std::strcmp(cubin, "--one-kernel");
  for (int i = !std::strcmp(cubin, "--shapes") ? 3 : 2; i < argc; i += 2) {
    if (!std::strcmp(argv[i], "--cupti-all")) { g_cupti_all = true; --i; continue; }
    if (!std::strcmp(argv[i], "--flip")) { g_flip = true; --i; continue; }
    if (!std::strcmp(argv[i], "--big-smem")) { g_big_smem = true; --i; continue; }
    if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", argv[i]); return 2; }
    if (!std::strcmp(argv[i], "--nodes")) c.nodes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--elems")) c.elems = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs")) c.runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cupti")) cupti = argv[i + 1];
    else if (!std::strcmp(argv[i], "--only")) only = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--arena")) g_arena_gib = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rest-ms")) g_rest_ms = std::atof(argv[i + 1]);
    else { std::fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  if (cupti && !trace_with_cupti(cupti)) return 2;
  if (!std::strcmp(cubin, "--shapes")) return run_shapes(argv[2], cupti, c.runs);
  if (one_kernel) {
    if (!cupti) { std::fprintf(stderr, "--one-kernel needs --cupti LIB\n"); return 2; }
    CK(cudaMalloc(&c.a, c.elems * sizeof(float)));
    CK(cudaMalloc(&c.b, c.elems * sizeof(float)));
    CK(cudaMemset(c.a, 0, c.elems * sizeof(float)));
    cudaStream_t s{};
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return run_one_kernel(c, s);
  }
  CK(cudaMalloc(&c.a, c.elems * sizeof(float)));
  CK(cudaMalloc(&c.b, c.elems * sizeof(float)));
  CK(cudaMemset(c.a, 0, c.elems * sizeof(float)));
  cudaStream_t s{};
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  FILE* f = std::fopen(cubin, "rb");
  if (!f) { std::perror(cubin); return 2; }
  std::string image;
  char buf[65536];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) image.append(buf, got);
  std::fclose(f);
  auto library = [&](const char* name = "edge_copy") {
    cudaLibrary_t lib{};
    CK(cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    cudaKernel_t k{};
    CK(cudaLibraryGetKernel(&k, lib, name));
    return k;
  };
  // Each variant's kernels are loaded (for the last, with the attribute set) only when it is run, so
  // that with --only nothing of another variant is in the context.
  auto compiled = [](int) { return reinterpret_cast<const void*>(edge_copy); };
  auto set_max_smem = [](cudaKernel_t k) {
    cudaFuncAttributes fa{};
    CK(cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(k)));
    CK(cudaKernelSetAttributeForDevice(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       fa.maxDynamicSharedSizeBytes, 0));
  };
  using Make = std::function<cudaGraphExec_t()>;
  auto one_library = [&](bool capture) {
    const cudaKernel_t k = library();
    auto f = [k](int) { return reinterpret_cast<const void*>(k); };
    return capture ? captured(c, f, s) : built(c, f);
  };
  auto get_attributes = [](cudaKernel_t k) {
    cudaFuncAttributes fa{};
    CK(cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(k)));
  };
  enum class Touch { none, get, set };
  auto library_each = [&](bool capture, Touch touch) {
    std::vector<cudaKernel_t> each;
    for (int i = 0; i < c.nodes; ++i) {
      each.push_back(library());
      if (touch == Touch::get) get_attributes(each.back());
      if (touch == Touch::set) set_max_smem(each.back());
    }
    auto f = [each](int i) { return reinterpret_cast<const void*>(each[i]); };
    return capture ? captured(c, f, s) : built(c, f);
  };
  // Consecutive kernels that differ: edge_copy, then `other`, alternating; compiled in and
  // captured (as torch's graph), or each from a library of its own in a built graph (as replay).
  auto alternate = [&](bool from_libraries, const void* other, const char* other_name) {
    if (!from_libraries) {
      auto f = [other](int i) { return i % 2 ? other : reinterpret_cast<const void*>(edge_copy); };
      return captured(c, f, s);
    }
    std::vector<cudaKernel_t> each;
    for (int i = 0; i < c.nodes; ++i) each.push_back(library(i % 2 ? other_name : "edge_copy"));
    auto f = [each](int i) { return reinterpret_cast<const void*>(each[i]); };
    return built(c, f);
  };
  const void* scale = reinterpret_cast<const void*>(edge_scale);
  const void* smem = reinterpret_cast<const void*>(edge_smem);
  struct Variant { const char* name; Make make; cudaGraphExec_t exec = nullptr; };
  std::vector<Variant> v = {
      {"captured, compiled in", [&] { return captured(c, compiled, s); }},
      {"built, compiled in", [&] { return built(c, compiled); }},
      {"captured, one library", [&] { return one_library(true); }},
      {"built, one library", [&] { return one_library(false); }},
      {"captured, a library each", [&] { return library_each(true, Touch::none); }},
      {"built, a library each (replay)", [&] { return library_each(false, Touch::none); }},
      // As replay did before 2026-12-04: every kernel's max dynamic shared memory set, to the
      // value it already had (the recorder reads it whether or not the launch function set it).
      {"the same, max dynamic smem set", [&] { return library_each(false, Touch::set); }},
      // As replay did until 2026-12-05: every kernel's attributes asked (cudaFuncGetAttributes),
      // none set.
      {"the same, attributes asked", [&] { return library_each(false, Touch::get); }},
      {"captured, compiled in, copy/scale", [&] { return alternate(false, scale, "edge_scale"); }},
      {"built, libraries, copy/scale", [&] { return alternate(true, scale, "edge_scale"); }},
      {"captured, compiled in, copy/smem", [&] { return alternate(false, smem, "edge_smem"); }},
      {"built, libraries, copy/smem", [&] { return alternate(true, smem, "edge_smem"); }},
  };
  if (only >= static_cast<int>(v.size())) {
    std::fprintf(stderr, "--only %d: there are %zu variants (0..%zu)\n", only, v.size(), v.size() - 1);
    return 2;
  }
  if (only >= 0) v = {v[only]};
  for (auto& x : v) x.exec = x.make();
  // One kernel alone, for what a node costs without an edge.
  Chain single = c;
  single.nodes = 1;
  const double one = span_us(captured(single, compiled, s), single, s);
  std::printf("chain of %d copies of %ld floats, 1 KiB of parameters each%s; one kernel alone %.3f us\n",
              c.nodes, c.elems, cupti ? ", CUPTI tracing kernels" : "", one);
  // Two passes, interleaved, so a drift of the GPU's clock shows as a difference between them.
  std::vector<double> first(v.size()), second(v.size());
  std::vector<Seen> seen(v.size());  // CUPTI's span, gap and carve-outs, second pass
  if (cupti) cupti_span_and_gap(c.nodes);  // what ran so far
  for (std::size_t i = 0; i < v.size(); ++i) first[i] = span_us(v[i].exec, c, s);
  for (std::size_t i = v.size(); i-- > 0;) {
    if (cupti) cupti_span_and_gap(c.nodes);
    second[i] = span_us(v[i].exec, c, s);
    if (cupti) seen[i] = cupti_span_and_gap(c.nodes);
  }
  const double base = (first[0] + second[0]) / 2;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double m = (first[i] + second[i]) / 2;
    std::printf("%-32s %9.3f us (%9.3f %9.3f)  %+7.3f us, %+6.3f us per edge, ratio %.4f", v[i].name,
                m, first[i], second[i], m - base, (m - base) / (c.nodes - 1), m / base);
    if (cupti)
      std::printf("; CUPTI: span %.3f us, median gap %+.3f us, carve-outs %s", seen[i].span, seen[i].gap,
                  seen[i].carveouts.c_str());
    std::printf("\n");
  }
  return 0;
}
#endif
