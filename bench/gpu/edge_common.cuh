// What bench/gpu/graph_edge_gap.cu and bench/gpu/replay_shapes.cu share (each is one program, so
// this header's definitions are each program's own): the copy kernel with 1 KiB of parameters,
// chains of it captured or built node by node, CUPTI's kernel records (cupti_records.cuh) read
// back as spans and gaps between kernels, and a graph's median span by events on an idle GPU.
#pragma once
#include <cuda_runtime.h>

#include "cupti_records.cuh"

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

// CUPTI's view of the launches since the last call (each launch's records after a warm-up
// kernel's when `warmup_first`): the median span (first start to last end
// of each launch's `nodes` kernels), the median gap between consecutive kernels, in us, and the
// carve-outs the kernels executed with (bytes, each value once).
struct Seen {
  double span = 0, gap = 0;
  std::string carveouts;
};
Seen cupti_span_and_gap(int nodes, bool warmup_first = false) {
  g_cupti.flush(1);
  std::vector<Cupti::Record> k;
  {
    std::lock_guard<std::mutex> lock(g_cupti.mu);
    k.swap(g_cupti.kernels);
  }
  std::sort(k.begin(), k.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  if (warmup_first) {  // replay_shapes --flip: each launch follows its warm-up kernel; drop those
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

}  // namespace
#endif
