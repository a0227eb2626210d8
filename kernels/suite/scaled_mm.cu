// scaled_mm: fp8-e4m3 A [M, K] x B [N, K] (b_layout NK, the default) with per-tensor scales, an
// optional bias [N], fp16 or bf16 out (kfleet ABI, family scaled_mm). fp8 tensor cores via
// mma.sync m16n8k32 e4m3 (sm_89 and sm_90).
//
// A block computes a 128 x 128 tile with 8 warps (2 x 4, 64 x 32 each) over 128-byte K slices.
// A and B slices stream global -> shared through a 3-stage cp.async pipeline; shared rows are
// 128 bytes with the 16-byte chunk index XORed by (row & 7), so the 8 rows an ldmatrix reads sit
// in 8 different bank groups. ldmatrix (b16 units = 2 fp8) yields exactly the m16n8k32 fp8 A and
// B fragments because both operands are K-major. Blocks are rasterised in groups of 8 tile rows
// so neighbouring blocks share A and B slices in L2. The epilogue scales by a_scale * b_scale,
// adds the bias and rounds once to the output type.
//
// Supported: any M and N, K a multiple of 16 (cp.async granularity; zero-filled tails), b_layout
// NK. b_layout KN answers KFLEET_UNSUPPORTED (it needs a byte transpose; use NK, what cuBLASLt
// and torch._scaled_mm take too).
//
// Variants: SMM_STAGES (default 3) pipeline depth.
#include "kfleet_harness/kernel.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef SMM_STAGES
#define SMM_STAGES 3
#endif

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 128;  // kBK in bytes = fp8 elements
constexpr int kStages = SMM_STAGES;
constexpr int kThreads = 256;
constexpr int kWarpN = 32;  // warp tile: 64 x kWarpN
constexpr int kNT = kWarpN / 8;
constexpr int kGroupM = 8;
constexpr size_t kStageBytes = (size_t)(kBM + kBN) * kBK;
constexpr size_t kSmemBytes = kStageBytes * kStages;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(uint32_t smem, const void* gmem, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem),
               "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void mma_fp8(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Byte offset of (row, 16-byte chunk) in a [rows][128-byte] swizzled tile.
__device__ __forceinline__ uint32_t swz(int row, int chunk) {
  return (uint32_t)(row * kBK + ((chunk ^ (row & 7)) << 4));
}

struct Params {
  const uint8_t* a;
  const uint8_t* b;
  const void* bias;
  void* d;
  int M, N, K;
  float scale;
  int bf16;
};

template <bool BF16>
__device__ __forceinline__ float load_bias(const void* bias, int col) {
  const uint16_t x = static_cast<const uint16_t*>(bias)[col];
  return BF16 ? kfleet_bf16_bits_to_float(x) : kfleet_half_bits_to_float(x);
}
template <bool BF16>
__device__ __forceinline__ uint32_t pack_out(float x, float y) {
  if (BF16) {
    __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  __half2 h = __floats2half2_rn(x, y);
  return *reinterpret_cast<uint32_t*>(&h);
}

template <bool BF16>
__global__ void __launch_bounds__(kThreads) scaled_mm_kernel(Params p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sbase = smem_u32(smem);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp >> 2, wn = warp & 3;  // warp tile origin: (64 wm, kWarpN wn)

  // Grouped rasterisation.
  const int tiles_m = (p.M + kBM - 1) / kBM, tiles_n = (p.N + kBN - 1) / kBN;
  const int pid = blockIdx.x;
  const int group = pid / (kGroupM * tiles_n);
  const int first_m = group * kGroupM;
  const int group_m = min(tiles_m - first_m, kGroupM);
  const int bm = first_m + (pid % (kGroupM * tiles_n)) % group_m;
  const int bn = (pid % (kGroupM * tiles_n)) / group_m;
  const int m0 = bm * kBM, n0 = bn * kBN;

  const int k_tiles = (p.K + kBK - 1) / kBK;
  auto load = [&](int kt, int st) {
    const uint32_t sa = sbase + (uint32_t)(st * kStageBytes);
    const uint32_t sb = sa + kBM * kBK;
    const int k0 = kt * kBK;
#pragma unroll
    for (int i = tid; i < kBM * 8; i += kThreads) {
      const int r = i >> 3, c = i & 7;
      const int kk = k0 + c * 16;
      const bool okk = kk < p.K;
      const bool oka = okk && m0 + r < p.M;
      const bool okb = okk && n0 + r < p.N;
      cp_async16(sa + swz(r, c), p.a + (oka ? (size_t)(m0 + r) * p.K + kk : 0), oka);
      cp_async16(sb + swz(r, c), p.b + (okb ? (size_t)(n0 + r) * p.K + kk : 0), okb);
    }
  };

  float acc[4][kNT][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < kNT; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load(s, s);
    cp_async_commit();
  }

  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    {
      const int nk = kt + kStages - 1;
      if (nk < k_tiles) load(nk, nk % kStages);
      cp_async_commit();
    }
    const int st = kt % kStages;
    const uint32_t sa = sbase + (uint32_t)(st * kStageBytes);
    const uint32_t sb = sa + kBM * kBK;
#pragma unroll
    for (int ks = 0; ks < kBK / 32; ++ks) {
      uint32_t af[4][4], bf[kNT / 2][4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = wm * 64 + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
        const int c = ks * 2 + (lane >> 4);
        ldmatrix_x4(af[i], sa + swz(r, c));
      }
#pragma unroll
      for (int j = 0; j < kNT / 2; ++j) {  // two n8 tiles per ldmatrix.x4
        const int r = wn * kWarpN + j * 16 + (lane & 7) + (lane >> 4) * 8;
        const int c = ks * 2 + ((lane >> 3) & 1);
        ldmatrix_x4(bf[j], sb + swz(r, c));
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < kNT / 2; ++j) {
          mma_fp8(acc[i][2 * j], af[i], bf[j][0], bf[j][1]);
          mma_fp8(acc[i][2 * j + 1], af[i], bf[j][2], bf[j][3]);
        }
    }
  }
  cp_async_wait<0>();

  // Epilogue.
  const int g = lane >> 2, q4 = lane & 3;
  uint16_t* D = static_cast<uint16_t*>(p.d);
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const int col = n0 + wn * kWarpN + j * 8 + q4 * 2;
    if (col >= p.N) continue;
    const bool pair = col + 1 < p.N;
    float b0 = 0.f, b1 = 0.f;
    if (p.bias) {
      b0 = load_bias<BF16>(p.bias, col);
      if (pair) b1 = load_bias<BF16>(p.bias, col + 1);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm * 64 + i * 16 + g + h * 8;
        if (row >= p.M) continue;
        const float x = acc[i][j][2 * h] * p.scale + b0;
        const float y = acc[i][j][2 * h + 1] * p.scale + b1;
        uint16_t* dst = D + (size_t)row * p.N + col;
        if (pair && (p.N & 1) == 0) {
          *reinterpret_cast<uint32_t*>(dst) = pack_out<BF16>(x, y);
        } else {
          const uint32_t v = pack_out<BF16>(x, y);
          dst[0] = (uint16_t)(v & 0xffffu);
          if (pair) dst[1] = (uint16_t)(v >> 16);
        }
      }
  }
}

template <bool BF16>
int launch(const Params& p, gpuStream_t stream) {
  if (cudaFuncSetAttribute(scaled_mm_kernel<BF16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)kSmemBytes) != cudaSuccess)
    return KFLEET_UNSUPPORTED;
  const int tiles = ((p.M + kBM - 1) / kBM) * ((p.N + kBN - 1) / kBN);
  scaled_mm_kernel<BF16><<<tiles, kThreads, kSmemBytes, stream>>>(p);
  return KFLEET_OK;
}

}  // namespace

extern "C" int kfleet_scaled_mm_launch(const kfleet_scaled_mm_args* a, gpuStream_t stream) {
  if (a->abi_version != KFLEET_ABI_VERSION || a->a_dtype != KFLEET_FP8_E4M3 ||
      a->b_dtype != KFLEET_FP8_E4M3 || a->b_layout != KFLEET_B_NK ||
      (a->out_dtype != KFLEET_FP16 && a->out_dtype != KFLEET_BF16) || a->m < 1 || a->n < 1 ||
      a->k < 16 || a->k % 16 != 0)
    return KFLEET_UNSUPPORTED;
  Params p;
  p.a = static_cast<const uint8_t*>(a->a);
  p.b = static_cast<const uint8_t*>(a->b);
  p.bias = a->bias;
  p.d = a->d;
  p.M = a->m;
  p.N = a->n;
  p.K = a->k;
  p.scale = a->a_scale * a->b_scale;
  p.bf16 = a->out_dtype == KFLEET_BF16;
  return p.bf16 ? launch<true>(p, stream) : launch<false>(p, stream);
}
