// Which reading of a short kernel's time is the kernel's own. On two H100s (2026-12-06) one
// stream launch of the Triton attention (about 17 us) read 0.72 and 0.80 us shorter under
// torch.profiler than under CUPTI set up as kfleet-measure sets it (the concurrent-kernel,
// memcpy and memset kinds only). torch.profiler enables further kinds (runtime, driver,
// synchronization, overhead, external correlation). This program times a kernel that knows its
// own span under either set of kinds, on a stream and in a CUDA graph, and prints how far
// CUPTI's record is from that span.
// The kernel: every block reads %globaltimer first and spins until --ns have passed since its
// own start; the first start and the last end over all blocks (atomicMin / atomicMax) are the
// span the SMs saw. A tracer's duration minus that span is the tracer's part: the block launch
// ramp and its own bookkeeping. A set of kinds that moves that excess moves every kernel's
// reading by as much.
//   nvcc -std=c++17 -O3 -arch=sm_90a -o tracer_truth bench/gpu/tracer_truth.cu
//   ./tracer_truth LIBCUPTI [--kinds kfleet|profiler] [--ns 16000] [--runs 200] [--blocks 132]
// One JSON line per launch way (stream, graph): medians over --runs launches, each on an idle
// GPU, of CUPTI's duration, the kernel's own span and their difference (us).
#include <cuda_runtime.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// span[0]: the first block's start, span[1]: the last block's end (ns, the GPU's global timer).
extern "C" __global__ void spin_for(unsigned long long ns, unsigned long long* span) {
  const unsigned long long t0 = global_ns();
  unsigned long long t = t0;
  while (t - t0 < ns) t = global_ns();
  if (threadIdx.x == 0) {
    atomicMin(&span[0], t0);
    atomicMax(&span[1], t);
  }
}

#ifndef __CUDA_ARCH__
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e)); std::exit(2); }
}
#define CK(x) check((x), #x)

// CUPTI loaded by path; its concurrent-kernel records' start@16 and end@24 (kfleet-measure's
// offsets) kept, every other record read and dropped.
struct Cupti {
  int (*next)(std::uint8_t*, std::size_t, void**) = nullptr;
  int (*flush)(std::uint32_t) = nullptr;
  std::mutex mu;  // CUPTI may hand buffers back on a thread of its own
  std::vector<std::pair<std::uint64_t, std::uint64_t>> kernels;
};
Cupti g_cupti;

// kfleet: the kinds kfleet-measure's tracer enables; profiler: those and the further kinds
// torch.profiler enables (bench/gpu/raw_cupti.py's EXTRA_KINDS but CUDA events).
bool trace(const char* lib, const std::string& kinds) {
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
      std::memcpy(&kind, r, 4);
      std::memcpy(&start, r + 16, 8);
      std::memcpy(&end, r + 24, 8);
      if (kind == 10) {
        std::lock_guard<std::mutex> lock(g_cupti.mu);
        g_cupti.kernels.emplace_back(start, end);
      }
    }
    std::free(b);
  };
  if (reg(req, done) != 0) return false;
  std::vector<int> on = {10, 1, 2};  // CONCURRENT_KERNEL, MEMCPY, MEMSET
  if (kinds == "profiler") on.insert(on.end(), {5, 4, 38, 17, 39});
  for (int k : on)
    if (enable(k) != 0) { std::fprintf(stderr, "cuptiActivityEnable(%d) failed\n", k); return false; }
  return true;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || argv[1][0] == '-') {
    std::printf("usage: tracer_truth LIBCUPTI [--kinds kfleet|profiler] [--ns N] [--runs N] [--blocks N]\n");
    return argc >= 2 && !std::strcmp(argv[1], "--help") ? 0 : 2;
  }
  std::string kinds = "kfleet";
  unsigned long long ns = 16000;
  int runs = 200, blocks = 132;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", argv[i]); return 2; }
    if (!std::strcmp(argv[i], "--kinds")) kinds = argv[i + 1];
    else if (!std::strcmp(argv[i], "--ns")) ns = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--blocks")) blocks = std::atoi(argv[i + 1]);
    else { std::fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  if (kinds != "kfleet" && kinds != "profiler") { std::fprintf(stderr, "--kinds is kfleet or profiler\n"); return 2; }
  if (ns == 0 || runs < 1 || blocks < 1) { std::fprintf(stderr, "--ns, --runs and --blocks are positive\n"); return 2; }
  if (!trace(argv[1], kinds)) return 2;  // before the CUDA context, as kfleet-measure does

  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned long long* span = nullptr;
  CK(cudaMalloc(&span, 2 * sizeof(unsigned long long)));
  const unsigned long long reset[2] = {~0ull, 0ull};
  cudaGraphExec_t graph{};
  {
    cudaGraph_t g{};
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    spin_for<<<blocks, 128, 0, s>>>(ns, span);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&graph, g));
    CK(cudaGraphDestroy(g));
  }
  for (const char* way : {"stream", "graph"}) {
    std::vector<double> own;
    for (int r = 0; r < runs + 10; ++r) {
      CK(cudaMemcpyAsync(span, reset, sizeof reset, cudaMemcpyHostToDevice, s));
      CK(cudaStreamSynchronize(s));  // an idle GPU before each launch
      if (!std::strcmp(way, "graph")) CK(cudaGraphLaunch(graph, s));
      else spin_for<<<blocks, 128, 0, s>>>(ns, span);
      CK(cudaGetLastError());
      unsigned long long got[2];
      CK(cudaMemcpyAsync(got, span, sizeof got, cudaMemcpyDeviceToHost, s));
      CK(cudaStreamSynchronize(s));
      if (r >= 10) own.push_back((got[1] - got[0]) / 1000.0);
    }
    g_cupti.flush(1);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> k;
    {
      std::lock_guard<std::mutex> lock(g_cupti.mu);
      k.swap(g_cupti.kernels);
    }
    std::sort(k.begin(), k.end());
    if (k.size() != static_cast<std::size_t>(runs + 10)) {
      std::fprintf(stderr, "%s: CUPTI recorded %zu kernels of %d launches\n", way, k.size(), runs + 10);
      return 1;
    }
    std::vector<double> traced, excess;
    for (int r = 10; r < runs + 10; ++r) {
      traced.push_back((k[r].second - k[r].first) / 1000.0);
      excess.push_back(traced.back() - own[r - 10]);
    }
    std::printf("{\"kinds\": \"%s\", \"way\": \"%s\", \"ns\": %llu, \"blocks\": %d, \"runs\": %d, "
                "\"cupti_median_us\": %.3f, \"own_span_median_us\": %.3f, \"excess_median_us\": %.3f}\n",
                kinds.c_str(), way, ns, blocks, runs, median(traced), median(own), median(excess));
  }
  CK(cudaGraphExecDestroy(graph));
  CK(cudaFree(span));
  return 0;
}
#endif
