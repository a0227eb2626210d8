// Whether the way kfleet-measure backs a replay's buffers costs a bandwidth-bound kernel time:
// replay maps each buffer with the driver's virtual memory API (cuMemCreate + cuMemMap) in an
// arena reserved at a fixed address, and flips the inputs to read-only around every timed launch
// (cuMemSetAccess), touching one word per 64 KiB of each buffer afterwards to warm the GPU's
// address translations again (protect.cu). torch's in-process run reads cudaMalloc'd memory that
// never changes mapping. A compiled rmsnorm (one Triton kernel, same config and registers)
// replays 3-4 % slower than it runs in-process (docs/measurement.md).
//
// One kernel (rmsnorm's traffic: --bytes read from one buffer and written to another, 16 bytes
// a thread) timed by events, each launch after the L2 flush kfleet-measure does (2 x L2, at least
// 64 MiB) and an idle device, on buffers backed each way:
//   0 cudaMalloc
//   1 one cuMemCreate per buffer, mapped where the driver reserves
//   2 the same, in a 1 TiB reservation at 0x600000000000 (the arena's)
//   3 as 2, the input flipped read-only before each launch and back after, not warmed
//   4 as 3, warmed as protect.cu's warm_translations does
//   5 one cuMemCreate per 2 MiB granule (as torch's expandable segments map)
//   6 both buffers in one 1 GiB cuMemCreate mapped at a 1 GiB-aligned address (whether larger,
//     aligned physical ranges let the GPU cover them with fewer translations)
//   7-9 as 2, the output's address moved 64 KiB, 512 KiB or 1 MiB into its mapping: in the arena
//     every buffer begins on a 2 MiB boundary, so input and output share their low 21 address
//     bits, while torch's allocator places them as it may (in-process on the arena's relative
//     layout, the compiled rmsnorm ran 1.1 % slower)
// Two passes (the second in reverse order) so that a drift of the GPU shows between them.
//   nvcc -std=c++17 -O3 -arch=sm_90a -o mapped_memory_time bench/gpu/mapped_memory_time.cu -lcuda
//   ./mapped_memory_time [--bytes 19447808] [--runs 300]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e)); std::exit(2); }
}
void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* s = nullptr;
    cuGetErrorString(r, &s);
    std::fprintf(stderr, "%s: %s\n", what, s ? s : "?");
    std::exit(2);
  }
}
#define CK(x) check((x), #x)

__global__ void stream_copy(uint4* dst, const uint4* src, std::uint64_t n) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    uint4 v = src[i];
    v.x ^= 1u;
    dst[i] = v;
  }
}

// protect.cu's warm_translations: one read per 64 KiB, kept alive by a store no read makes.
__global__ void touch_pages(const unsigned int* p, std::uint64_t words, unsigned int* sink) {
  constexpr std::uint64_t kStrideWords = (64u << 10) / 4;
  const std::uint64_t i = (static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kStrideWords;
  if (i < words && p[i] == 0x9e3779b9u && p[words - 1] == 0x7f4a7c15u) *sink = 1;
}

CUmemAllocationProp prop_of(int dev) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  return p;
}

void set_access(CUdeviceptr va, std::size_t size, bool read_only) {
  CUmemAccessDesc d{};
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = 0;
  d.flags = read_only ? CU_MEM_ACCESS_FLAGS_PROT_READ : CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CK(cuMemSetAccess(va, size, &d, 1));
}

// `bytes` (rounded up to the granularity) at `va`, from one allocation or one per granule.
void map_at(CUdeviceptr va, std::size_t bytes, std::size_t gran, bool per_granule) {
  const CUmemAllocationProp p = prop_of(0);
  const std::size_t piece = per_granule ? gran : bytes;
  for (std::size_t off = 0; off < bytes; off += piece) {
    CUmemGenericAllocationHandle h{};
    CK(cuMemCreate(&h, piece, &p, 0));
    CK(cuMemMap(va + off, piece, 0, h, 0));
    CK(cuMemRelease(h));  // the mapping keeps it
  }
  set_access(va, bytes, false);
}

struct Buffers { void* src = nullptr; void* dst = nullptr; };

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = 19447808;
  int runs = 300;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help")) {
      std::printf("usage: mapped_memory_time [--bytes N] [--runs N]\n");
      return 0;
    }
    if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", argv[i]); return 2; }
    if (!std::strcmp(argv[i], "--bytes")) bytes = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[++i]);
    else { std::fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  std::size_t gran = 0;
  const CUmemAllocationProp p = prop_of(0);
  CK(cuMemGetAllocationGranularity(&gran, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const std::size_t size = (bytes + gran - 1) / gran * gran;
  const std::uint64_t n16 = bytes / 16;

  // The backings. Each variant gets buffers of its own, all made before any is timed.
  CUdeviceptr arena = 0;
  CK(cuMemAddressReserve(&arena, 1ull << 40, 2u << 20, 0x600000000000ull, 0));
  if (arena != 0x600000000000ull) std::printf("note: the arena landed at 0x%llx\n", (unsigned long long)arena);
  std::uint64_t arena_used = 0;
  auto vmm = [&](bool in_arena, bool per_granule, std::size_t dst_offset = 0) {
    Buffers b;
    for (void** x : {&b.src, &b.dst}) {
      const std::size_t shift = x == &b.dst ? dst_offset : 0;
      const std::size_t mapped = shift ? size + gran : size;
      CUdeviceptr va = 0;
      if (in_arena) va = arena + arena_used, arena_used += mapped;
      else CK(cuMemAddressReserve(&va, mapped, gran, 0, 0));
      map_at(va, mapped, gran, per_granule);
      *x = reinterpret_cast<void*>(va + shift);
    }
    return b;
  };
  auto one_large = [&] {
    constexpr std::size_t kLarge = 1ull << 30;
    CUdeviceptr va = 0;
    CK(cuMemAddressReserve(&va, kLarge, kLarge, 0, 0));
    map_at(va, kLarge, gran, false);
    Buffers b;
    b.src = reinterpret_cast<void*>(va);
    b.dst = reinterpret_cast<void*>(va + (kLarge / 2));
    return b;
  };
  if (2 * size > (1ull << 30)) { std::fprintf(stderr, "--bytes: at most 512 MiB\n"); return 2; }
  Buffers plain;
  CK(cudaMalloc(&plain.src, size));
  CK(cudaMalloc(&plain.dst, size));
  enum class Flip { none, cold, warm };
  struct Variant { const char* name; Buffers b; Flip flip; };
  std::vector<Variant> v = {
      {"cudaMalloc", plain, Flip::none},
      {"cuMemCreate, anywhere", vmm(false, false), Flip::none},
      {"cuMemCreate, in the arena", vmm(true, false), Flip::none},
      {"arena, input flipped, not warmed", vmm(true, false), Flip::cold},
      {"arena, input flipped, warmed", vmm(true, false), Flip::warm},
      {"a cuMemCreate per 2 MiB granule", vmm(false, true), Flip::none},
      {"one 1 GiB cuMemCreate, aligned", one_large(), Flip::none},
      {"arena, output moved 64 KiB", vmm(true, false, 64u << 10), Flip::none},
      {"arena, output moved 512 KiB", vmm(true, false, 512u << 10), Flip::none},
      {"arena, output moved 1 MiB", vmm(true, false, 1u << 20), Flip::none},
  };
  for (auto& x : v) CK(cudaMemset(x.b.src, 0x3c, bytes));

  int l2 = 0, sms = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const std::size_t flush_bytes = std::max<std::size_t>(2 * static_cast<std::size_t>(l2), 64u << 20);
  void* flush = nullptr;
  unsigned int* sink = nullptr;
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMalloc(&sink, 4));
  cudaStream_t hs{};
  CK(cudaStreamCreateWithFlags(&hs, cudaStreamNonBlocking));
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  const unsigned blocks = static_cast<unsigned>(sms) * 8;

  auto median_us = [&](const Variant& x) {
    std::vector<float> ms;
    for (int r = 0; r < runs + 10; ++r) {
      CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes, hs));
      CK(cudaDeviceSynchronize());
      if (x.flip != Flip::none) {
        set_access(reinterpret_cast<CUdeviceptr>(x.b.src), size, true);
        if (x.flip == Flip::warm) {
          for (void* buf : {x.b.src, x.b.dst}) {
            const std::uint64_t words = size / 4, pages = (words + (16u << 10) - 1) / (16u << 10);
            touch_pages<<<static_cast<unsigned>((pages + 127) / 128), 128, 0, hs>>>(
                static_cast<const unsigned int*>(buf), words, sink);
          }
          CK(cudaStreamSynchronize(hs));
        }
      }
      CK(cudaEventRecord(t0, nullptr));
      stream_copy<<<blocks, 256>>>(static_cast<uint4*>(x.b.dst), static_cast<const uint4*>(x.b.src), n16);
      CK(cudaGetLastError());
      CK(cudaEventRecord(t1, nullptr));
      CK(cudaDeviceSynchronize());
      if (x.flip != Flip::none) set_access(reinterpret_cast<CUdeviceptr>(x.b.src), size, false);
      float m = 0;
      CK(cudaEventElapsedTime(&m, t0, t1));
      if (r >= 10) ms.push_back(m);
    }
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2] * 1000.0;
  };

  std::vector<double> first(v.size()), second(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) first[i] = median_us(v[i]);
  for (std::size_t i = v.size(); i-- > 0;) second[i] = median_us(v[i]);
  std::printf("one copy of %zu bytes (%u blocks of 256), each launch after a %zu-byte L2 flush on an idle device; "
              "granularity %zu bytes; median of %d runs, two passes\n",
              bytes, blocks, flush_bytes, gran, runs);
  const double base = (first[0] + second[0]) / 2;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double m = (first[i] + second[i]) / 2;
    std::printf("%-34s %8.3f us (%8.3f %8.3f)  ratio %.4f\n", v[i].name, m, first[i], second[i], m / base);
  }
  return 0;
}
