// fa_s512: fp16 attention for S <= 512 and D = 64 on tensor cores (kfleet ABI, family attention).
//
// FlashAttention-2 style: a block owns BM = 16 x WARPS query rows, each warp 16 of them. Q is
// held in registers as mma.sync A fragments (ldmatrix); K and V stream through shared memory in
// 64-key tiles with cp.async double buffering (tile t+1 loads while tile t is computed).
// S = Q K^T (mma.sync m16n8k16, fp32 accumulate), an online softmax in registers (exp2, the row
// max and sum kept per thread and reduced across the quad), then O += P V with P re-packed as
// fp16 A fragments and V read with ldmatrix.trans. Non-causal and causal (top-left aligned);
// any S up to 512 (rows past S are zero-filled, keys past S masked).
//
// Variants (one define each, so a campaign child changes one thing):
//   O_ACCUM_HALF=1   seed 001 iteration 1: the O accumulator is fp16 (half2 registers, P V on
//                    the f16-accumulate mma) instead of fp32: half the O registers.
//   FA_WGMMA=1       (default) on sm_90a builds and a compute capability 9.x device, the wgmma
//                    kernel (namespace wg below); FA_WGMMA=0, a FA_CONFIG, or any other build
//                    or device runs the mma.sync kernel. On the H100 at B2 H8 S512 D64 the
//                    wgmma kernel measured 5.97 us of GPU time (6.31 with O_ACCUM_HALF) against
//                    9.89 us for the mma.sync kernel and 8.12 us for cuDNN's.
//   FA_CONFIG=N      mma.sync block shape: 1 = 4 warps x 16 rows; 2 = 2 warps x 16 rows; 3 = 2 x
//                    16 rows with the keys split between 2 warp groups (merged at the end). 0
//                    (default) picks 3 when 64-row blocks would not fill the GPU twice over, else 1.
// Needs sm_80 or newer (cp.async, ldmatrix, mma.sync m16n8k16).
#include "kfleet_harness/kernel.hpp"

#include <cuda_fp16.h>

#ifndef O_ACCUM_HALF
#define O_ACCUM_HALF 0
#endif
#ifndef FA_CONFIG
#define FA_CONFIG 0
#endif
#ifndef FA_WGMMA
#define FA_WGMMA 1
#endif
#if FA_WGMMA && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FA_WGMMA_BODY 1
#else
#define FA_WGMMA_BODY 0
#endif

namespace {

constexpr int kD = 64;              // head dim
constexpr int kBN = 64;             // keys per tile
constexpr int kStride = kD + 8;     // halves per smem row: 144 bytes keeps ldmatrix conflict-free
constexpr int kMaxS = 512;
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
               "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void mma_f32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#if O_ACCUM_HALF
__device__ __forceinline__ void mma_f16(uint32_t (&c)[2], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
      "{%0,%1};\n"
      : "+r"(c[0]), "+r"(c[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif
// 2^x on the SFU (ex2.approx, ~2 ulp; -inf gives +0), without exp2f's slow-path checks.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

struct Params {
  const __half* q;
  const __half* k;
  const __half* v;
  __half* o;
  int S, causal;
  float scale_log2;  // softmax_scale * q_scale * k_scale * log2(e)
  float out_scale;   // v_scale
};

// Shared memory, dynamic: Q [BM][kStride], then K and V [2 stages][64 SPLIT keys][kStride].
template <int WARPS_M, int SPLIT>
constexpr size_t smem_bytes() {
  return ((size_t)16 * WARPS_M + (size_t)2 * 2 * kBN * SPLIT) * kStride * sizeof(__half);
}

// WARPS_M warps own 16 query rows each; SPLIT groups of them take turns through the keys: a
// stage holds SPLIT 64-key tiles and group s multiplies tile s of it. The groups' partial
// (max, sum, O) are merged through shared memory at the end. SPLIT 2 doubles the warps working
// on a small grid (B2 H8 S512 is only 512 warps of 16 rows) and halves each one's key loop.
template <int WARPS_M, int SPLIT>
__global__ void __launch_bounds__(WARPS_M * SPLIT * 32, 1) fa_s512_kernel(Params p) {
  constexpr int BM = 16 * WARPS_M;
  constexpr int NT = WARPS_M * SPLIT * 32;
  constexpr int KT = kBN * SPLIT;  // keys per stage
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __half* sq = reinterpret_cast<__half*>(smem_raw);
  __half* sk = sq + BM * kStride;           // [2][KT][kStride]
  __half* sv = sk + 2 * KT * kStride;       // [2][KT][kStride]

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp % WARPS_M, ws = warp / WARPS_M;
  const int g = lane >> 2, q4 = lane & 3;
  const int S = p.S;
  // Causal: the heaviest query blocks (most key tiles) start first.
  const int qb = p.causal ? (int)gridDim.x - 1 - (int)blockIdx.x : (int)blockIdx.x;
  const int row0 = qb * BM;
  const size_t head = (size_t)blockIdx.y * S * kD;
  const __half* Q = p.q + head;
  const __half* K = p.k + head;
  const __half* V = p.v + head;

  int n_tiles = (S + KT - 1) / KT;
  if (p.causal) n_tiles = min(n_tiles, (row0 + BM - 1) / KT + 1);

  auto load_kv = [&](int t, int st) {
    const int base = t * KT;
    __half* dk = sk + st * KT * kStride;
    __half* dv = sv + st * KT * kStride;
#pragma unroll
    for (int i = tid; i < KT * 8; i += NT) {
      const int r = i >> 3, c = (i & 7) * 8;
      const bool ok = base + r < S;
      const size_t off = (size_t)(ok ? base + r : 0) * kD + c;
      cp_async16(dk + r * kStride + c, K + off, ok);
      cp_async16(dv + r * kStride + c, V + off, ok);
    }
  };

#pragma unroll
  for (int i = tid; i < BM * 8; i += NT) {
    const int r = i >> 3, c = (i & 7) * 8;
    const bool ok = row0 + r < S;
    cp_async16(sq + r * kStride + c, Q + (size_t)(ok ? row0 + r : 0) * kD + c, ok);
  }
  load_kv(0, 0);
  cp_async_commit();

  uint32_t qf[4][4];
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
#if O_ACCUM_HALF
  uint32_t oh[8][2];
#pragma unroll
  for (int j = 0; j < 8; ++j) oh[j][0] = oh[j][1] = 0u;
#else
  float o[8][4];
#pragma unroll
  for (int j = 0; j < 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
#endif
  const int wrow0 = row0 + wm * 16;  // this warp's first query row
  const int qrow_g = wrow0 + g;      // this thread's rows: qrow_g and qrow_g + 8

  for (int t = 0; t < n_tiles; ++t) {
    const int st = t & 1;
    if (t + 1 < n_tiles) {
      load_kv(t + 1, st ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (t == 0) {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const int r = wm * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
        ldmatrix_x4(qf[kk], sq + r * kStride + kk * 16 + (lane >> 4) * 8);
      }
    }
    const int key0 = t * KT + ws * kBN;  // this warp's 64 keys
    // Skip a tile with no key this warp may see (past S, or all after its rows when causal).
    if (key0 < S && !(p.causal && key0 > wrow0 + 15)) {
      const __half* tk = sk + (st * KT + ws * kBN) * kStride;
      const __half* tv = sv + (st * KT + ws * kBN) * kStride;

      // S = Q K^T for 16 rows x 64 keys.
      float s[8][4];
#pragma unroll
      for (int j = 0; j < 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int kk = 0; kk < 4; kk += 2) {
          uint32_t b[4];
          ldmatrix_x4(b, tk + (j * 8 + (lane & 7)) * kStride + kk * 16 + (lane >> 3) * 8);
          mma_f32(s[j], qf[kk], b[0], b[1]);
          mma_f32(s[j], qf[kk + 1], b[2], b[3]);
        }
      }

      // Mask keys past S and (causal) keys after the query.
      const bool need_mask = key0 + kBN > S || (p.causal && key0 + kBN - 1 > wrow0);
      if (need_mask) {
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = key0 + j * 8 + q4 * 2 + (e & 1);
            const int qrow = qrow_g + (e >> 1) * 8;
            if (key >= S || (p.causal && key > qrow)) s[j][e] = -INFINITY;
          }
      }

      // Online softmax (scores in log2 units).
      float alpha[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_r[h], mx * p.scale_log2);
        const float m_use = m_new == -INFINITY ? 0.f : m_new;
        alpha[h] = fast_exp2(m_r[h] - m_use);
        m_r[h] = m_new;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          s[j][2 * h] = fast_exp2(s[j][2 * h] * p.scale_log2 - m_use);
          s[j][2 * h + 1] = fast_exp2(s[j][2 * h + 1] * p.scale_log2 - m_use);
          sum += s[j][2 * h] + s[j][2 * h + 1];
        }
        l_r[h] = l_r[h] * alpha[h] + sum;
      }
#if O_ACCUM_HALF
      const __half2 a0 = __float2half2_rn(alpha[0]), a1 = __float2half2_rn(alpha[1]);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        __half2 x = __hmul2(*reinterpret_cast<__half2*>(&oh[j][0]), a0);
        __half2 y = __hmul2(*reinterpret_cast<__half2*>(&oh[j][1]), a1);
        oh[j][0] = *reinterpret_cast<uint32_t*>(&x);
        oh[j][1] = *reinterpret_cast<uint32_t*>(&y);
      }
#else
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        o[j][0] *= alpha[0];
        o[j][1] *= alpha[0];
        o[j][2] *= alpha[1];
        o[j][3] *= alpha[1];
      }
#endif

      // O += P V.
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const uint32_t pa[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]),
                                pack_half2(s[2 * kk][2], s[2 * kk][3]),
                                pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int j = 0; j < 8; j += 2) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, tv + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kStride +
                                   j * 8 + (lane >> 4) * 8);
#if O_ACCUM_HALF
          mma_f16(oh[j], pa, b[0], b[1]);
          mma_f16(oh[j + 1], pa, b[2], b[3]);
#else
          mma_f32(o[j], pa, b[0], b[1]);
          mma_f32(o[j + 1], pa, b[2], b[3]);
#endif
        }
      }
    }
    __syncthreads();  // the next iteration's loads overwrite this stage
  }

  // O as fp32 values: of[j][e] at row qrow_g + 8 (e >> 1), column j * 8 + q4 * 2 + (e & 1).
  float of[8][4];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#if O_ACCUM_HALF
    const float2 x = __half22float2(*reinterpret_cast<const __half2*>(&oh[j][0]));
    const float2 y = __half22float2(*reinterpret_cast<const __half2*>(&oh[j][1]));
    of[j][0] = x.x; of[j][1] = x.y; of[j][2] = y.x; of[j][3] = y.y;
#else
    of[j][0] = o[j][0]; of[j][1] = o[j][1]; of[j][2] = o[j][2]; of[j][3] = o[j][3];
#endif
  }

  if (SPLIT > 1) {
    // Merge the groups' partials into group 0 (the stages are free: every load has landed and
    // the loop ended on a barrier). Per thread: 32 O values, 2 maxima, 2 partial sums.
    float* red = reinterpret_cast<float*>(smem_raw);
    constexpr int kSlot = 36;
    if (ws > 0) {
      float* dst = red + (((ws - 1) * WARPS_M + wm) * 32 + lane) * kSlot;
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) dst[j * 4 + e] = of[j][e];
      dst[32] = m_r[0]; dst[33] = m_r[1]; dst[34] = l_r[0]; dst[35] = l_r[1];
    }
    __syncthreads();
    if (ws > 0) return;
#pragma unroll
    for (int sp = 1; sp < SPLIT; ++sp) {
      const float* src = red + (((sp - 1) * WARPS_M + wm) * 32 + lane) * kSlot;
      float a_self[2], a_other[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float mo = src[32 + h];
        const float m = fmaxf(m_r[h], mo);
        const float mu = m == -INFINITY ? 0.f : m;
        a_self[h] = fast_exp2(m_r[h] - mu);
        a_other[h] = fast_exp2(mo - mu);
        m_r[h] = m;
        l_r[h] = l_r[h] * a_self[h] + src[34 + h] * a_other[h];
      }
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          of[j][e] = of[j][e] * a_self[e >> 1] + src[j * 4 + e] * a_other[e >> 1];
    }
  }

  // Normalise and store.
  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = l_r[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv[h] = p.out_scale / l;
  }
  __half* O = p.o + head;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = qrow_g + h * 8;
    if (row >= S) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      *reinterpret_cast<__half2*>(O + (size_t)row * kD + j * 8 + q4 * 2) =
          __floats2half2_rn(of[j][2 * h] * inv[h], of[j][2 * h + 1] * inv[h]);
  }
}

// ---------------------------------------------------------------------------------------------
// sm_90a (FA_WGMMA=1, the default there): both products on wgmma. A block owns BM = 64 query
// rows and is 2 warpgroups that split the keys: each takes half of the 128-key tiles (at most 2,
// S <= 512) and keeps its own Q copy, K and V tiles in shared memory ([row][64 halves] = 128 B
// rows, 128 B swizzle), all requested by cp.async at the start in one commit group per tile, so
// a warpgroup's first product waits only for Q and its first K tile. S = Q K^T is wgmma
// m64n128k16 (Q, K from shared memory); the online softmax runs on the accumulator registers;
// O += P V is wgmma m64n64k16 with P from registers and V read MN-major (no transpose). The
// second tile's S is issued together with the first tile's P V, so that product runs during the
// second softmax. The two halves' (max, sum, O) merge through shared memory at the end.
// O_ACCUM_HALF=1 accumulates P V in fp16 (wgmma .f16 accumulator) as the mma.sync kernel does.
namespace wg {

constexpr int BM = 64, BN = 128, kThreads = 256;
constexpr int kQBytes = BM * 128, kTile = BN * 128;
constexpr int kWgBytes = kQBytes + 4 * kTile;  // one warpgroup's Q, K0, V0, K1, V1
static_assert(kMaxS <= 2 * 2 * BN, "two 128-key tiles per warpgroup");

__host__ __device__ constexpr size_t smem_bytes() { return 1024 + 2 * (size_t)kWgBytes; }

#if FA_WGMMA_BODY
// Byte offset of 16-byte chunk c (0..7) of row r in a [rows][128 B] tile, 128 B swizzle.
__device__ __forceinline__ uint32_t tile_off(int r, int c) {
  return (uint32_t)(r * 128 + ((c ^ (r & 7)) << 4));
}
// K-major descriptor (Q as A, K as B of Q K^T): 8-row groups 1024 B apart, 128 B swizzle.
__device__ __forceinline__ uint64_t desc_k(uint32_t saddr) {
  return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
         ((uint64_t)1 << 62);
}
// MN-major descriptor ([key][d] V as the B of P V): 8 keys 1024 B apart, 128 B swizzle.
__device__ __forceinline__ uint64_t desc_mn(uint32_t saddr) {
  return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)(8192 >> 4) << 16) |
         ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
constexpr uint64_t kKStep = 2;           // 16 d (32 B) along a K-major row
constexpr uint64_t kVStep = 2048 >> 4;   // 16 keys of an MN-major tile

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
template <typename T, int N>
__device__ __forceinline__ void fence_regs(T (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if constexpr (sizeof(T) == 4 && T(0.5) != T(0)) asm volatile("" : "+f"(d[i])::"memory");
    else asm volatile("" : "+r"(d[i])::"memory");
  }
}
__device__ __forceinline__ void bar_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_wait_n(int n) {  // n: groups that may stay in flight
  switch (n) {
    case 0: cp_async_wait<0>(); break;
    case 1: cp_async_wait<1>(); break;
    case 2: cp_async_wait<2>(); break;
    default: cp_async_wait<3>(); break;
  }
}
__device__ __forceinline__ void wgmma_ss_m64n128k16(float (&d)[64], uint64_t da, uint64_t db, int acc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(acc));
}
#if O_ACCUM_HALF
// O (fp16 pairs) += P V, P from registers, V MN-major (imm-trans-b = 1).
__device__ __forceinline__ void wgmma_pv(uint32_t (&d)[16], const uint32_t (&a)[4], uint64_t db) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, {%16, %17, %18, %19}, %20, 1, 1, 1, 1;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
#else
__device__ __forceinline__ void wgmma_pv(float (&d)[32], const uint32_t (&a)[4], uint64_t db) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
#endif
#endif  // FA_WGMMA_BODY

__global__ void __launch_bounds__(kThreads, 1) fa_s512_wgmma(Params p) {
#if FA_WGMMA_BODY
  // The merge's (max, sum) exchange is the kernel's only static shared memory, and it exists
  // only in this body: the host reads its size to know the body was built.
  __shared__ float ml[4][128];
  extern __shared__ unsigned char dsmem[];
  const uint32_t base = (smem_u32(dsmem) + 1023u) & ~1023u;
  unsigned char* gbase = dsmem + (base - smem_u32(dsmem));

  const int tid = threadIdx.x, c = tid >> 7, wtid = tid & 127;
  const int warp = wtid >> 5, lane = tid & 31, g = lane >> 2, q4 = lane & 3;
  const int S = p.S;
  const int row0 = blockIdx.x * BM;
  const size_t head = (size_t)blockIdx.y * S * kD;
  const int n_keys = p.causal ? min(S, row0 + BM) : S;
  const int nt = (n_keys + BN - 1) / BN;
  const int nt0 = (nt + 1) / 2;
  const int tb = c == 0 ? 0 : nt0, count = c == 0 ? nt0 : nt - nt0;  // this warpgroup's tiles

  const uint32_t sw = base + c * kWgBytes;  // this warpgroup's region: Q, K0, V0, K1, V1
  unsigned char* gw = gbase + c * kWgBytes;
  {
    const __half* Q = p.q + head;
    const __half* K = p.k + head;
    const __half* V = p.v + head;
#pragma unroll
    for (int i = wtid; i < BM * 8; i += 128) {
      const int r = i >> 3, ch = i & 7;
      const bool ok = row0 + r < S;
      cp_async16(gw + tile_off(r, ch), Q + (size_t)(ok ? row0 + r : 0) * kD + ch * 8, ok);
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
#pragma unroll
      for (int which = 0; which < 2; ++which) {  // commit groups: Q+K0, V0, K1, V1
        if (j < count) {
          const __half* src = which ? V : K;
          unsigned char* dst = gw + kQBytes + (2 * j + which) * kTile;
          const int key0 = (tb + j) * BN;
#pragma unroll
          for (int i = wtid; i < BN * 8; i += 128) {
            const int r = i >> 3, ch = i & 7;
            const bool ok = key0 + r < n_keys;
            cp_async16(dst + tile_off(r, ch), src + (size_t)(ok ? key0 + r : 0) * kD + ch * 8, ok);
          }
        }
        cp_async_commit();
      }
    }
  }
  // The group holding a tile: K_j is group 2 j, V_j group 2 j + 1, of 4.
  auto landed = [&](int group) {
    cp_async_wait_n(3 - group);
    fence_proxy_async();
    bar_sync(1 + c, 128);
  };

  const int wrow0 = row0 + warp * 16, qrow_g = wrow0 + g;
  const uint64_t dq = desc_k(sw);
#if O_ACCUM_HALF
  uint32_t o[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) o[i] = 0u;
#else
  float o[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) o[i] = 0.f;
#endif
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
  float s[64];
  uint32_t pa[8][4];
  float alpha[2];

  auto softmax = [&](int t) {  // tile t's scores in s -> probabilities; sets alpha, m, l
    const int key0 = t * BN;
    const bool need_mask = key0 + BN > n_keys || (p.causal && key0 + BN - 1 > wrow0);
    if (need_mask) {
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = key0 + j * 8 + q4 * 2 + (e & 1);
          const int qrow = qrow_g + (e >> 1) * 8;
          if (key >= S || (p.causal && key > qrow)) s[4 * j + e] = -INFINITY;
        }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m_r[h], mx * p.scale_log2);
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      alpha[h] = fast_exp2(m_r[h] - m_use);
      m_r[h] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        s[4 * j + 2 * h] = fast_exp2(s[4 * j + 2 * h] * p.scale_log2 - m_use);
        s[4 * j + 2 * h + 1] = fast_exp2(s[4 * j + 2 * h + 1] * p.scale_log2 - m_use);
        sum += s[4 * j + 2 * h] + s[4 * j + 2 * h + 1];
      }
      l_r[h] = l_r[h] * alpha[h] + sum;
    }
  };
  auto pack = [&]() {  // P as wgmma A fragments; only once the P V reading pa has completed
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {  // keys 16 kk ..: accumulator blocks 2 kk, 2 kk + 1
      pa[kk][0] = pack_half2(s[8 * kk + 0], s[8 * kk + 1]);
      pa[kk][1] = pack_half2(s[8 * kk + 2], s[8 * kk + 3]);
      pa[kk][2] = pack_half2(s[8 * kk + 4], s[8 * kk + 5]);
      pa[kk][3] = pack_half2(s[8 * kk + 6], s[8 * kk + 7]);
    }
  };
  auto rescale = [&]() {
#if O_ACCUM_HALF
    const __half2 a0 = __float2half2_rn(alpha[0]), a1 = __float2half2_rn(alpha[1]);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      __half2 x = *reinterpret_cast<__half2*>(&o[2 * j]), y = *reinterpret_cast<__half2*>(&o[2 * j + 1]);
      x = __hmul2(x, a0);
      y = __hmul2(y, a1);
      o[2 * j] = *reinterpret_cast<uint32_t*>(&x);
      o[2 * j + 1] = *reinterpret_cast<uint32_t*>(&y);
    }
#else
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      o[4 * j] *= alpha[0];
      o[4 * j + 1] *= alpha[0];
      o[4 * j + 2] *= alpha[1];
      o[4 * j + 3] *= alpha[1];
    }
#endif
  };
  auto issue_pv = [&](int j) {
    const uint64_t dv = desc_mn(sw + kQBytes + (2 * j + 1) * kTile);
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) wgmma_pv(o, pa[kk], dv + kk * kVStep);
    wgmma_commit();
  };
  auto issue_s = [&](int j) {
    const uint64_t dk = desc_k(sw + kQBytes + 2 * j * kTile);
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) wgmma_ss_m64n128k16(s, dq + kk * kKStep, dk + kk * kKStep, kk);
    wgmma_commit();
  };

  if (count > 0) {
    landed(0);  // Q and K0
    wgmma_fence();
    issue_s(0);
    wgmma_wait<0>();
    fence_regs(s);
    softmax(tb);
    pack();
    landed(1);  // V0
    if (count > 1) {
      landed(2);  // K1
      wgmma_fence();
      issue_s(1);
      issue_pv(0);
      wgmma_wait<1>();
      fence_regs(s);
      softmax(tb + 1);
      wgmma_wait<0>();
      fence_regs(o);
      rescale();
      pack();
      landed(3);  // V1
      wgmma_fence();
      issue_pv(1);
    } else {
      wgmma_fence();
      issue_pv(0);
    }
    wgmma_wait<0>();
    fence_regs(o);
  }
  cp_async_wait<0>();

  float of[32];
#if O_ACCUM_HALF
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const float2 x = __half22float2(*reinterpret_cast<__half2*>(&o[2 * j]));
    const float2 y = __half22float2(*reinterpret_cast<__half2*>(&o[2 * j + 1]));
    of[4 * j] = x.x, of[4 * j + 1] = x.y, of[4 * j + 2] = y.x, of[4 * j + 3] = y.y;
  }
#else
#pragma unroll
  for (int i = 0; i < 32; ++i) of[i] = o[i];
#endif
  // Merge: warpgroup 1 leaves (m, l, O) in its own region (its tiles are no longer read),
  // warpgroup 0 folds them into its own.
  float* buf = reinterpret_cast<float*>(gbase + kWgBytes);  // O: [32][128]
  if (c == 1) {
#pragma unroll
    for (int i = 0; i < 32; ++i) buf[i * 128 + wtid] = of[i];
    ml[0][wtid] = m_r[0];
    ml[1][wtid] = m_r[1];
    ml[2][wtid] = l_r[0];
    ml[3][wtid] = l_r[1];
  }
  __syncthreads();
  if (c == 1) return;
  float a_self[2], a_other[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float m1 = ml[h][wtid], l1 = ml[2 + h][wtid];
    const float m = fmaxf(m_r[h], m1);
    const float m_use = m == -INFINITY ? 0.f : m;
    a_self[h] = fast_exp2(m_r[h] - m_use);
    a_other[h] = fast_exp2(m1 - m_use);
    l_r[h] = l_r[h] * a_self[h] + l1 * a_other[h];
  }
#pragma unroll
  for (int i = 0; i < 32; ++i) of[i] = of[i] * a_self[(i >> 1) & 1] + buf[i * 128 + wtid] * a_other[(i >> 1) & 1];

  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = l_r[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv[h] = p.out_scale / l;
  }
  __half* O = p.o + head;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = qrow_g + h * 8;
    if (row >= S) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      *reinterpret_cast<__half2*>(O + (size_t)row * kD + j * 8 + q4 * 2) =
          __floats2half2_rn(of[4 * j + 2 * h] * inv[h], of[4 * j + 2 * h + 1] * inv[h]);
  }
#endif  // FA_WGMMA_BODY
}

// Whether this device and build can take the wgmma path (once per device).
bool available(int dev) {
  static int cached[64];  // 0 unknown, 1 yes, 2 no
  if (dev < 0 || dev >= 64) return false;
  if (cached[dev] == 0) {
    int major = 0;
    cudaFuncAttributes fa{};
    const bool ok =
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
        major == 9 && cudaFuncGetAttributes(&fa, fa_s512_wgmma) == cudaSuccess &&
        fa.sharedSizeBytes > 0;
    cached[dev] = ok ? 1 : 2;
  }
  return cached[dev] == 1;
}

int launch(const kfleet_attention_args* a, const Params& p, gpuStream_t stream) {
  if (cudaFuncSetAttribute(fa_s512_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)smem_bytes()) != cudaSuccess)
    return -1;
  const dim3 grid((unsigned)((a->seq_len + BM - 1) / BM), (unsigned)(a->batch * a->heads));
  fa_s512_wgmma<<<grid, kThreads, smem_bytes(), stream>>>(p);
  return 0;
}

}  // namespace wg

template <int WARPS_M, int SPLIT>
int launch(const kfleet_attention_args* a, const Params& p, gpuStream_t stream) {
  constexpr int BM = 16 * WARPS_M;
  constexpr size_t bytes = smem_bytes<WARPS_M, SPLIT>();
  static_assert(bytes >= (size_t)(SPLIT - 1) * WARPS_M * 32 * 36 * sizeof(float),
                "the merge reuses the stages");
  if (cudaFuncSetAttribute(fa_s512_kernel<WARPS_M, SPLIT>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) != cudaSuccess)
    return KFLEET_UNSUPPORTED;
  const dim3 grid((unsigned)((a->seq_len + BM - 1) / BM), (unsigned)(a->batch * a->heads));
  fa_s512_kernel<WARPS_M, SPLIT><<<grid, WARPS_M * SPLIT * 32, bytes, stream>>>(p);
  return KFLEET_OK;
}

}  // namespace

extern "C" int kfleet_attention_launch(const kfleet_attention_args* a, gpuStream_t stream) {
  if (a->abi_version != KFLEET_ABI_VERSION || a->head_dim != kD || a->seq_len < 1 ||
      a->seq_len > kMaxS || a->q_dtype != KFLEET_FP16 || a->kv_dtype != KFLEET_FP16 ||
      a->out_dtype != KFLEET_FP16 || (a->causal != 0 && a->causal != 1))
    return KFLEET_UNSUPPORTED;
  Params p;
  p.q = static_cast<const __half*>(a->q);
  p.k = static_cast<const __half*>(a->k);
  p.v = static_cast<const __half*>(a->v);
  p.o = static_cast<__half*>(a->o);
  p.S = a->seq_len;
  p.causal = a->causal;
  p.scale_log2 = a->softmax_scale * a->q_scale * a->k_scale * kLog2e;
  p.out_scale = a->v_scale;
  if (FA_WGMMA && FA_CONFIG == 0) {
    int dev = -1;
    if (cudaGetDevice(&dev) == cudaSuccess && wg::available(dev) && wg::launch(a, p, stream) == 0)
      return KFLEET_OK;
  }
  int config = FA_CONFIG;
  if (config == 0) {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const long blocks4 = (long)((a->seq_len + 63) / 64) * a->batch * a->heads;
    config = blocks4 < 2L * sms ? 3 : 1;
  }
  switch (config) {
    case 1: return launch<4, 1>(a, p, stream);
    case 2: return launch<2, 1>(a, p, stream);
    case 3: return launch<2, 2>(a, p, stream);
    default: return KFLEET_UNSUPPORTED;
  }
}
