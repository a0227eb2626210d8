// The replayed graphs' shapes in a process of its own, and one kernel launched two ways: what the
// measuring process (kfleet-measure) adds between a replayed graph's kernels, and to one kernel's
// time, set apart from the graph and the kernel themselves (docs/measurement.md, "Still apart").
//   nvcc -std=c++17 -O3 -arch=sm_90a -o replay_shapes bench/gpu/replay_shapes.cu
//        kernels/harness/cpu/launch_list.cpp        (the lists are read by the harness's parser)
//   ./replay_shapes --shapes launches.txt [--runs 300] [--cupti LIB [--cupti-all]]
//                   [--arena GIB [--flip]] [--big-smem] [--rest-ms MS] [--flush-each]
//                   [--real DEVICE_CODE[,...] [--load module|library]]
//   ./replay_shapes --one-kernel --cupti LIB [--cupti-all] [--elems N] [--runs 300]
// --shapes: each kernel of a kfleet launch list as the empty kernel in its grid, block and dynamic
// shared memory, chained captured and built, each timed on a stream of its own and as
// kfleet-measure times a launch; with --cupti, CUPTI's span and median gap between kernels.
// --one-kernel: one copy kernel on a stream (as replay issues a one-kernel recording) against a
// one-node graph (as torch launches it), by CUPTI.
// --cupti-all: CUPTI's memcpy and memset records enabled beside its kernel records, as
// kfleet-measure's tracer has them (12-05: no gap in a process of its own, with or without).
#include "edge_common.cuh"
#include "../../kernels/harness/cpu/launch_list.hpp"

#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

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
// --flush-each: CUPTI's buffers flushed (forced) after each timed run, as kfleet-measure does to
// judge each sample by its own records; the in-process yardstick flushes once, at the end.
bool g_flush_each = false;
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
    if (g_flush_each && g_cupti.flush) g_cupti.flush(1);  // as kfleet-measure judges each sample
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
// The kernel nodes of a kfleet launch list file, read by the harness's own parser (ABI.md's
// grammar), and where its last buffer ends.
std::vector<kfleet::harness::KernelNode> kernels_of(const char* path, unsigned long long* buffers_end) {
  std::ifstream f(path);
  if (!f) { std::perror(path); std::exit(2); }
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<kfleet::harness::LaunchList> lists;
  const std::string err = kfleet::harness::parse_launch_lists(text, &lists);
  if (!err.empty()) { std::fprintf(stderr, "%s: %s\n", path, err.c_str()); std::exit(2); }
  std::vector<kfleet::harness::KernelNode> v;
  for (const auto& l : lists) {
    for (const auto& b : l.buffers) *buffers_end = std::max<unsigned long long>(*buffers_end, b.va + b.bytes);
    for (const auto& n : l.nodes)
      if (n.kind == kfleet::harness::LaunchNode::Kind::kernel) v.push_back(n.kernel);
  }
  return v;
}
struct Shape { dim3 grid, block; unsigned smem; };
std::vector<Shape> shapes_of(const std::vector<kfleet::harness::KernelNode>& ks) {
  std::vector<Shape> v;
  for (const auto& k : ks)
    v.push_back({dim3(k.grid[0], k.grid[1], k.grid[2]), dim3(k.block[0], k.block[1], k.block[2]), k.shared_bytes});
  return v;
}

// --real DC[,DC...] (with --shapes LIST): the recording's own kernels with their recorded
// parameter bytes instead of the empty kernel, in a process of its own. Each device-code file
// (the recorder's dc-benchmark images) is loaded as Triton and torch load theirs, a module by
// cuModuleLoadData (--load module), or as kfleet-measure's replay loads the job's, a library by
// cuLibraryLoadData (--load library); each launch is captured through cuLaunchKernel as Triton's
// launcher issues it. The list's buffers lie in the arena (mapped over all of them, filled with
// 0x3c bytes: 0.0115 as fp32, 1.06 as fp16). The bisection of docs/measurement.md's "Still apart":
// the kernels' gaps and time with the job's code in a clean process, loaded either way.
struct RealKernel {
  std::string name;
  dim3 grid, block;
  unsigned smem = 0;
  int max_dynamic_shared = 0;
  std::vector<std::pair<unsigned, unsigned>> slots;  // offset, size
  std::vector<unsigned char> params;
  void* fn = nullptr;  // a CUfunction, or a CUkernel cast to one (cuLaunchKernel takes either)
  std::vector<void*> ptrs;
};
struct Driver {
  int (*module_load)(void**, const void*) = nullptr;
  int (*module_function)(void**, void*, const char*) = nullptr;
  int (*func_attr)(void*, int, int) = nullptr;
  int (*library_load)(void**, const void*, void*, void**, unsigned, void*, void**, unsigned) = nullptr;
  int (*library_kernel)(void**, void*, const char*) = nullptr;
  int (*kernel_attr)(int, int, void*, int) = nullptr;
  int (*launch)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**) = nullptr;
};
const char* g_real = nullptr;
int (*g_launch)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**) = nullptr;
bool g_load_library = false;

std::vector<RealKernel> real_kernels_of(const std::vector<kfleet::harness::KernelNode>& nodes) {
  std::vector<RealKernel> v;
  for (const auto& n : nodes) {
    if (n.cluster[0] > 0) { std::fprintf(stderr, "--real: %s has a cluster shape, not supported here\n", n.function.c_str()); std::exit(2); }
    RealKernel k;
    k.name = n.function;
    k.grid = dim3(n.grid[0], n.grid[1], n.grid[2]), k.block = dim3(n.block[0], n.block[1], n.block[2]);
    k.smem = n.shared_bytes;
    k.max_dynamic_shared = n.max_dynamic_shared;
    for (const auto& sl : n.slots) k.slots.push_back({sl.offset, sl.size});
    k.params.assign(n.params.begin(), n.params.end());
    v.push_back(std::move(k));
  }
  for (auto& k : v)
    for (const auto& sl : k.slots) k.ptrs.push_back(k.params.data() + sl.first);
  return v;
}

void load_real(std::vector<RealKernel>& ks) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) { std::fprintf(stderr, "--real: cannot load libcuda.so.1\n"); std::exit(2); }
  Driver d;
  d.module_load = reinterpret_cast<decltype(d.module_load)>(dlsym(h, "cuModuleLoadData"));
  d.module_function = reinterpret_cast<decltype(d.module_function)>(dlsym(h, "cuModuleGetFunction"));
  d.func_attr = reinterpret_cast<decltype(d.func_attr)>(dlsym(h, "cuFuncSetAttribute"));
  d.library_load = reinterpret_cast<decltype(d.library_load)>(dlsym(h, "cuLibraryLoadData"));
  d.library_kernel = reinterpret_cast<decltype(d.library_kernel)>(dlsym(h, "cuLibraryGetKernel"));
  d.kernel_attr = reinterpret_cast<decltype(d.kernel_attr)>(dlsym(h, "cuKernelSetAttribute"));
  d.launch = reinterpret_cast<decltype(d.launch)>(dlsym(h, "cuLaunchKernel"));
  if (!d.module_load || !d.module_function || !d.func_attr || !d.library_load || !d.library_kernel || !d.kernel_attr ||
      !d.launch) { std::fprintf(stderr, "--real: the driver lacks a call\n"); std::exit(2); }
  std::vector<void*> handles;
  std::istringstream files(g_real);
  std::string file;
  while (std::getline(files, file, ',')) {
    std::ifstream f(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    void* handle = nullptr;
    const int r = g_load_library ? d.library_load(&handle, bytes.data(), nullptr, nullptr, 0, nullptr, nullptr, 0)
                                 : d.module_load(&handle, bytes.data());
    if (r != 0) { std::fprintf(stderr, "--real: %s did not load (%d)\n", file.c_str(), r); std::exit(2); }
    handles.push_back(handle);
  }
  for (auto& k : ks) {
    for (void* handle : handles)
      if ((g_load_library ? d.library_kernel(&k.fn, handle, k.name.c_str()) : d.module_function(&k.fn, handle, k.name.c_str())) == 0)
        break;
    if (!k.fn) { std::fprintf(stderr, "--real: no kernel %s in the device code\n", k.name.c_str()); std::exit(2); }
    constexpr int kMaxDynamicShared = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    if (k.smem > 0 && k.max_dynamic_shared > (48 << 10) &&
        (g_load_library ? d.kernel_attr(kMaxDynamicShared, k.max_dynamic_shared, k.fn, 0)
                        : d.func_attr(k.fn, kMaxDynamicShared, k.max_dynamic_shared)) != 0) {
      std::fprintf(stderr, "--real: cannot allow %s %d bytes of shared memory\n", k.name.c_str(), k.max_dynamic_shared);
      std::exit(2);
    }
  }
  g_launch = d.launch;  // the modules and libraries stay loaded for the process
}

int run_shapes(const char* path, const char* cupti, int runs) {
  unsigned long long buffers_end = 0;
  const std::vector<kfleet::harness::KernelNode> nodes = kernels_of(path, &buffers_end);
  const std::vector<Shape> sh = shapes_of(nodes);
  std::vector<RealKernel> real;
  if (g_real) {
    real = real_kernels_of(nodes);
    const unsigned long long need = buffers_end > 0x600000000000ull ? buffers_end - 0x600000000000ull : 0;
    g_arena_gib = std::max<int>(g_arena_gib, static_cast<int>((need + (1ull << 30) - 1) >> 30));
  }
  if (g_arena_gib > 0) open_arena();
  if (g_flip && g_arena_gib <= 0) { std::fprintf(stderr, "--flip needs --arena\n"); return 2; }
  if (g_real && g_flip) { std::fprintf(stderr, "--real writes the arena: no --flip with it\n"); return 2; }
  if (g_real) {
    CK(cudaMemset(reinterpret_cast<void*>(g_vmm.base), 0x3c, g_vmm.mapped));
    load_real(real);
  }
  if (g_big_smem) {
    float* out = nullptr;
    CK(cudaMalloc(&out, 132 * sizeof(float)));
    CK(cudaFuncSetAttribute(reinterpret_cast<const void*>(big_smem_kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10));
    big_smem_kernel<<<132, 256, 200 << 10>>>(out);
    CK(cudaDeviceSynchronize());
  }
  std::printf("process: %s%s%s\n", g_arena_gib > 0 ? "arena mapped, " : "", g_flip ? "flip each run, " : "",
              g_big_smem ? "a 200 KiB shared-memory kernel run first" : "");
  if (sh.size() < (g_real ? 1u : 2u)) { std::fprintf(stderr, "%s: too few kernel lines\n", path); return 2; }
  unsigned most = 0;  // the largest dynamic shared memory a node asks, allowed once
  for (const auto& x : sh) most = std::max(most, x.smem);
  if (most > 48u << 10)
    CK(cudaFuncSetAttribute(reinterpret_cast<const void*>(edge_idle), cudaFuncAttributeMaxDynamicSharedMemorySize,
                            static_cast<int>(most)));
  cudaStream_t s{};
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto make = [&](bool capture) {
    if (g_real) {  // captured as Triton's launcher issues each kernel (capture or not: one way)
      cudaGraph_t g{};
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      for (auto& k : real)
        if (g_launch(k.fn, k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z, k.smem, s,
                     k.ptrs.empty() ? nullptr : k.ptrs.data(), nullptr) != 0) {
          std::fprintf(stderr, "--real: cuLaunchKernel of %s failed\n", k.name.c_str());
          std::exit(2);
        }
      CK(cudaStreamEndCapture(s, &g));
      cudaGraphExec_t e{};
      CK(cudaGraphInstantiate(&e, g));
      CK(cudaGraphDestroy(g));
      return e;
    }
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
      if (g_real && !capture) continue;
      cudaGraphExec_t e = make(capture);
      if (cupti) cupti_span_and_gap(c.nodes);  // what ran so far
      const double span = as_measured ? span_us_as_measured(e, c) : span_us(e, c, s);
      std::printf("%s of %s, %d kernels, %s, %s: events span %.3f us",
                  !g_real ? "shapes" : g_load_library ? "real kernels loaded as libraries" : "real kernels loaded as modules",
                  path, c.nodes, capture ? "captured" : "built", as_measured ? "as kfleet-measure times" : "own stream", span);
      if (cupti) {
        // The flush's memset is not a kernel record, so each launch is still `nodes` records.
        const Seen seen = cupti_span_and_gap(c.nodes, as_measured && g_flip);
        std::printf("; CUPTI: span %.3f us, median gap %+.3f us (%.3f us over %d edges), carve-outs %s", seen.span,
                    seen.gap, seen.gap * (c.nodes - 1), c.nodes - 1, seen.carveouts.c_str());
      }
      std::printf("\n");
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
  const bool shapes = argc >= 3 && !std::strcmp(argv[1], "--shapes");
  const bool one_kernel = argc >= 2 && !std::strcmp(argv[1], "--one-kernel");
  if (!shapes && !one_kernel) {
    std::printf("usage: replay_shapes --shapes LAUNCH_LIST [--runs N] [--cupti LIB [--cupti-all]]\n"
                "                     [--arena GIB [--flip]] [--big-smem] [--rest-ms MS]\n"
                "                     [--flush-each] [--real DEVICE_CODE[,...] [--load module|library]]\n"
                "       replay_shapes --one-kernel --cupti LIB [--cupti-all] [--elems N] [--runs N]\n"
                "--arena, --flip, --big-smem, --rest-ms: the measuring process's address space, protection flip,\n"
                "a large shared-memory kernel and its rest between runs around the graph\n"
                "--real: the list's own kernels and parameters, its device code loaded as modules (as Triton)\n"
                "or libraries (as kfleet-measure's replay)\n");
    return argc >= 2 && !std::strcmp(argv[1], "--help") ? 0 : 2;
  }
  Chain c;
  const char* cupti = nullptr;
  for (int i = shapes ? 3 : 2; i < argc; i += 2) {
    if (!std::strcmp(argv[i], "--cupti-all")) { g_cupti_all = true; --i; continue; }
    if (!std::strcmp(argv[i], "--flip")) { g_flip = true; --i; continue; }
    if (!std::strcmp(argv[i], "--big-smem")) { g_big_smem = true; --i; continue; }
    if (!std::strcmp(argv[i], "--flush-each")) { g_flush_each = true; --i; continue; }
    if (!std::strcmp(argv[i], "--load") && i + 1 < argc) {
      if (std::strcmp(argv[i + 1], "module") && std::strcmp(argv[i + 1], "library")) {
        std::fprintf(stderr, "--load wants module or library\n");
        return 2;
      }
      g_load_library = !std::strcmp(argv[i + 1], "library");
      continue;
    }
    if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", argv[i]); return 2; }
    if (!std::strcmp(argv[i], "--elems")) c.elems = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs")) c.runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cupti")) cupti = argv[i + 1];
    else if (!std::strcmp(argv[i], "--arena")) g_arena_gib = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rest-ms")) g_rest_ms = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--real")) g_real = argv[i + 1];
    else { std::fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  if (cupti && !trace_with_cupti(cupti)) return 2;
  if (shapes) return run_shapes(argv[2], cupti, c.runs);
  if (!cupti) { std::fprintf(stderr, "--one-kernel needs --cupti LIB\n"); return 2; }
  CK(cudaMalloc(&c.a, c.elems * sizeof(float)));
  CK(cudaMalloc(&c.b, c.elems * sizeof(float)));
  CK(cudaMemset(c.a, 0, c.elems * sizeof(float)));
  cudaStream_t s{};
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return run_one_kernel(c, s);
}
#endif
