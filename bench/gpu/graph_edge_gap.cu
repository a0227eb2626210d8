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
// captured, compiled-in chain, per edge. (A replayed graph's own shapes, in a process set up as
// the measuring process: bench/gpu/replay_shapes.cu.)
//   nvcc -std=c++17 -O3 -arch=sm_90a -cubin -o edge.cubin bench/gpu/graph_edge_gap.cu
//   nvcc -std=c++17 -O3 -arch=sm_90a -o graph_edge_gap bench/gpu/graph_edge_gap.cu
//   ./graph_edge_gap edge.cubin [--nodes 16] [--elems 4194304] [--runs 300] [--cupti LIB] [--only I]
// --cupti: with CUPTI's kernel tracing on (libcupti.so by path), as when kfleet-measure times;
// each variant then also prints CUPTI's median span and gap between kernels (its second pass).
// --only I: variant I alone (0 = captured, compiled in; the order printed), in a context where no
// other variant was loaded: on an H200 (2026-12-04) every library variant was as fast as the
// compiled-in chain until the max-smem variant had run, and 0.45 us per edge slower after it.
#include "edge_common.cuh"

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
#ifndef __CUDA_ARCH__
int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || argv[1][0] == '-') {
    std::printf("usage: graph_edge_gap CUBIN [--nodes N] [--elems N] [--runs N] [--cupti LIB] [--only I]\n");
    return argc >= 2 && !std::strcmp(argv[1], "--help") ? 0 : 2;
  }
  Chain c;
  const char* cubin = argv[1];
  const char* cupti = nullptr;
  int only = -1;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", argv[i]); return 2; }
    if (!std::strcmp(argv[i], "--nodes")) c.nodes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--elems")) c.elems = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs")) c.runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cupti")) cupti = argv[i + 1];
    else if (!std::strcmp(argv[i], "--only")) only = std::atoi(argv[i + 1]);
    else { std::fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  if (cupti && !trace_with_cupti(cupti)) return 2;
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
