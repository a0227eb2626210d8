// Which reading of a short kernel's time is the kernel's own. On two H100s (2026-12-06) one
// stream launch of the Triton attention (about 17 us) read 0.72 and 0.80 us shorter under
// torch.profiler than under CUPTI set up as kfleet-measure sets it (the concurrent-kernel,
// memcpy and memset kinds only). torch.profiler enables further kinds (runtime, driver,
// synchronization, overhead, external correlation). This program times a kernel that knows its
// own span under either set of kinds, on a stream and in a CUDA graph, and prints how far
// CUPTI's record is from that span.
// The kernel: every block, one warp, reads %globaltimer first and spins until --ns have passed
// since its own start; the first start and the last end over all blocks (atomicMin / atomicMax)
// are the span the SMs saw. A tracer's duration minus that span is the tracer's part: the block
// launch ramp and its own bookkeeping (and the kernel's last atomics). A set of kinds that moves
// that excess moves every kernel's reading by as much. A block is one warp because spinning
// warps of one block did not all run at once: with blocks of four warps and lane 0 of warp 0
// alone recording, 1,056 blocks read a 16 us span that CUPTI timed at 32.9 us (an H100,
// docs/evidence/2026-12-06-h100-tracer-truth-grids.log).
//   nvcc -std=c++17 -O3 -arch=sm_90a -o tracer_truth bench/gpu/tracer_truth.cu
//   ./tracer_truth LIBCUPTI [--kinds kfleet|profiler] [--ns 16000] [--runs 200] [--blocks 132]
// One JSON line per launch way (stream, graph): medians over --runs launches, each on an idle
// GPU, of CUPTI's duration, the kernel's own span and their difference (us).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cupti_records.cuh"

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
  if (threadIdx.x == 0) {  // a block is one warp: its lane 0 saw the block's whole span
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
  // kfleet: the kinds kfleet-measure's tracer enables (concurrent kernel, memcpy, memset);
  // profiler: those and the further kinds torch.profiler enables (runtime, driver,
  // synchronization, overhead, external correlation: bench/gpu/raw_cupti.py's EXTRA_KINDS; the
  // numbers are held against cupti_activity.h by bench/gpu/test_inprocess_trace.py).
  g_cupti_all = true;
  if (kinds == "profiler") g_cupti_extra_kinds = {5, 4, 38, 17, 39};
  if (!trace_with_cupti(argv[1])) {  // before the CUDA context, as kfleet-measure does
    std::fprintf(stderr, "cannot set CUPTI up from %s (kinds: %s)\n", argv[1], kinds.c_str());
    return 2;
  }

  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned long long* span = nullptr;
  CK(cudaMalloc(&span, 2 * sizeof(unsigned long long)));
  const unsigned long long reset[2] = {~0ull, 0ull};
  cudaGraphExec_t graph{};
  {
    cudaGraph_t g{};
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    spin_for<<<blocks, 32, 0, s>>>(ns, span);
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
      else spin_for<<<blocks, 32, 0, s>>>(ns, span);
      CK(cudaGetLastError());
      unsigned long long got[2];
      CK(cudaMemcpyAsync(got, span, sizeof got, cudaMemcpyDeviceToHost, s));
      CK(cudaStreamSynchronize(s));
      if (r >= 10) own.push_back((got[1] - got[0]) / 1000.0);
    }
    g_cupti.flush(1);
    std::vector<Cupti::Record> k;
    {
      std::lock_guard<std::mutex> lock(g_cupti.mu);
      k.swap(g_cupti.kernels);
    }
    std::sort(k.begin(), k.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
    if (k.size() != static_cast<std::size_t>(runs + 10)) {
      std::fprintf(stderr, "%s: CUPTI recorded %zu kernels of %d launches\n", way, k.size(), runs + 10);
      return 1;
    }
    std::vector<double> traced, excess;
    for (int r = 10; r < runs + 10; ++r) {
      traced.push_back((k[r].end - k[r].start) / 1000.0);
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
