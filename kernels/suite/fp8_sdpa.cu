// fp8_sdpa: attention with fp16 Q and fp8-e4m3 K/V (per-tensor scales), D = 64, any S (tested to
// 4096 and beyond: the key loop streams), non-causal and causal (kfleet ABI, family attention).
//
// FlashAttention-2 style like fa_s512.cu: a block owns BM = 16 x WARPS query rows; Q sits in
// registers as mma.sync A fragments. K and V arrive as fp8 bytes through a cp.async double
// buffer (half the global traffic of fp16), and each 64-key tile is converted once to an fp16
// shared tile (cvt.rn.f16x2.e4m3x2, two values per instruction) that ldmatrix feeds to
// mma.sync m16n8k16 with fp32 accumulation. The scales cost nothing in the loop: q_scale and
// k_scale fold into the softmax exponent, v_scale into the final 1/l.
//
// Variants (one define each):
//   USE_SMEM_SWIZZLE_XOR=1  seed 000 stage 3 step 2: the fp16 K/V tiles use unpadded 128-byte
//                           rows with the 16-byte chunk index XORed by (row & 7), instead of
//                           the default padded 144-byte rows (both avoid ldmatrix bank
//                           conflicts; the swizzle saves the padding and changes the
//                           conversion's store pattern).
//   FP8_WARPS=N             mma.sync kernel: warps per block (4 or 8); 0 (default) picks 8 when
//                           the grid still fills the GPU twice over, else 4.
//   FP8_WGMMA=1 (default)   on sm_90a builds and a compute capability 9.x device, the
//                           warp-specialised wgmma kernel (namespace wg below); elsewhere, or
//                           with FP8_WGMMA=0, the mma.sync kernel. USE_SMEM_SWIZZLE_XOR picks
//                           the wgmma kernel's shared layouts too (128 B swizzle or wgmma's
//                           unswizzled core-matrix layout).
//   FP8_WS_STAGES=N         wgmma kernel: fp16 K/V stages in flight (2 to 6, default 4).
//   FP8_PINGPONG=0|1        wgmma kernel: the two consumer warpgroups take turns issuing
//                           (default 0: each issues when its tile is ready).
//   FP8_PERSISTENT=0|1      wgmma kernel: one block per SM, each looping over (query block,
//                           head) units, the producer running ahead into the next unit (default
//                           1); 0: one block per unit.
//   FP8_Q_REGS=0|1          wgmma kernel: Q as register A fragments of S = Q K^T, loaded once
//                           per unit, with setmaxnreg moving registers from the producer to the
//                           consumers (default 1); 0: Q read from shared memory by every S.
//   FP8_LAZY_RESCALE=0|1    wgmma kernel: from a unit's second tile on, the exponentials are
//                           taken against the running row maxima and checked afterwards; the
//                           maxima move, and O is rescaled, only when a probability would pass
//                           2^8 (default: FP8_Q_REGS, which it needs); 0: every tile's maxima
//                           first (the exact online softmax, kept for the first tile and for the
//                           rare fix-ups).
//   FP8_RESCALE_TEST=0|1|2  tests only: 1 sends every tile through the lazy rescale's fix-up, 2
//                           through its recomputation of S (CI and bench/gpu/suite-gates.sh
//                           gate both, so that paths real inputs rarely take are checked).
//   FP8_PRODUCER_REGS=N, FP8_CONSUMER_REGS=N
//                           wgmma kernel with FP8_Q_REGS: the registers setmaxnreg gives the
//                           producer and each consumer warpgroup (default 104 and 192; multiples
//                           of 8, P + 2 C <= 3 x 168). On an H200: 112/192 and 104/200 within
//                           0.4 % of the default, 120/192 7.5 % slower
//                           (git show 7f263d8:docs/gpu-runs/2026-11-26-fp8-split-tail.log).
//   On an H200 at B4 H16 S2048 D64 (harness medians, one machine, 2026-11-26): wgmma 164.3 us,
//   161.5 us with the XOR swizzle; FP8_LAZY_RESCALE=0 183.1 us. The H100 of 2026-11-25:
//   FP8_LAZY_RESCALE=0 182.1 / 182.7 us (FP8_PINGPONG=1: 187.1 / 194.5); mma.sync 351 / 356 us.
// Needs sm_89 or newer (the fp8 conversion instruction).
#include "kfleet_harness/kernel.hpp"

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#ifndef USE_SMEM_SWIZZLE_XOR
#define USE_SMEM_SWIZZLE_XOR 0
#endif
#ifndef FP8_WARPS
#define FP8_WARPS 0
#endif
#ifndef FP8_WGMMA
#define FP8_WGMMA 1
#endif
#if FP8_WGMMA && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FP8_WGMMA_BODY 1
#else
#define FP8_WGMMA_BODY 0
#endif

namespace {

constexpr int kD = 64;
constexpr int kBN = 64;
#if USE_SMEM_SWIZZLE_XOR
constexpr int kKVStride = kD;      // halves per fp16 K/V row; chunks XOR-swizzled
#else
constexpr int kKVStride = kD + 8;  // padded rows
#endif
constexpr int kQStride = kD + 8;
constexpr float kLog2e = 1.4426950408889634f;

// Offset (in halves) of element (r, c) of an fp16 K/V tile; c is a multiple of 8 for ldmatrix.
__device__ __forceinline__ int kv_idx(int r, int c) {
#if USE_SMEM_SWIZZLE_XOR
  return r * kKVStride + ((((c >> 3) ^ (r & 7))) << 3) + (c & 7);
#else
  return r * kKVStride + c;
#endif
}

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

__device__ __forceinline__ uint32_t fp8x2_to_half2(uint16_t x) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(x), __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}

struct Params {
  const __half* q;
  const uint8_t* k;
  const uint8_t* v;
  __half* o;
  int S, causal;
  int bh;            // batch * heads
  float scale_log2;  // softmax_scale * q_scale * k_scale * log2(e)
  float out_scale;   // v_scale
};

// Both kernels' epilogue: a warp's 16 rows of O, as mma accumulator fragments (o[4 j + e]: rows
// qrow_g and qrow_g + 8, columns 8 j + 2 q4 and + 1), each divided by its row's sum of
// probabilities (l_r: this thread's partial sums, reduced across the quad here), scaled by
// out_scale and stored as fp16; rows past S are skipped.
__device__ __forceinline__ void store_o(const float* o, const float (&l_r)[2], float out_scale,
                                        __half* O, int qrow_g, int q4, int S) {
  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = l_r[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv[h] = out_scale / l;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = qrow_g + h * 8;
    if (row >= S) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      *reinterpret_cast<__half2*>(O + (size_t)row * kD + j * 8 + q4 * 2) =
          __floats2half2_rn(o[4 * j + 2 * h] * inv[h], o[4 * j + 2 * h + 1] * inv[h]);
  }
}

template <int WARPS>
constexpr size_t smem_bytes() {
  return (size_t)16 * WARPS * kQStride * 2      // Q (fp16)
         + (size_t)2 * 2 * kBN * kD             // raw fp8 K, V x 2 stages
         + (size_t)2 * kBN * kKVStride * 2;     // fp16 K, V
}

template <int WARPS>
__global__ void __launch_bounds__(WARPS * 32, 1) fp8_sdpa_kernel(Params p) {
  constexpr int BM = 16 * WARPS;
  constexpr int NT = WARPS * 32;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __half* sq = reinterpret_cast<__half*>(smem_raw);                          // [BM][kQStride]
  uint8_t* sraw = smem_raw + (size_t)BM * kQStride * 2;                       // [2][2][kBN][kD]
  __half* sk = reinterpret_cast<__half*>(sraw + 2 * 2 * kBN * kD);           // [kBN] rows
  __half* sv = sk + kBN * kKVStride;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, q4 = lane & 3;
  const int S = p.S;
  const int qb = p.causal ? (int)gridDim.x - 1 - (int)blockIdx.x : (int)blockIdx.x;
  const int row0 = qb * BM;
  const size_t head = (size_t)blockIdx.y * S * kD;
  const __half* Q = p.q + head;
  const uint8_t* K = p.k + head;
  const uint8_t* V = p.v + head;

  int n_tiles = (S + kBN - 1) / kBN;
  if (p.causal) n_tiles = min(n_tiles, (row0 + BM - 1) / kBN + 1);

  auto raw = [&](int st, int which) { return sraw + ((size_t)st * 2 + which) * kBN * kD; };
  auto load_kv = [&](int t, int st) {
    const int base = t * kBN;
    uint8_t* rk = raw(st, 0);
    uint8_t* rv = raw(st, 1);
#pragma unroll
    for (int i = tid; i < kBN * 4; i += NT) {  // 64 rows x 4 chunks of 16 fp8
      const int r = i >> 2, c = (i & 3) * 16;
      const bool ok = base + r < S;
      const size_t off = (size_t)(ok ? base + r : 0) * kD + c;
      cp_async16(rk + r * kD + c, K + off, ok);
      cp_async16(rv + r * kD + c, V + off, ok);
    }
  };

#pragma unroll
  for (int i = tid; i < BM * 8; i += NT) {
    const int r = i >> 3, c = (i & 7) * 8;
    const bool ok = row0 + r < S;
    cp_async16(sq + r * kQStride + c, Q + (size_t)(ok ? row0 + r : 0) * kD + c, ok);
  }
  load_kv(0, 0);
  cp_async_commit();

  uint32_t qf[4][4];
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
  float o[8][4];
#pragma unroll
  for (int j = 0; j < 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  const int qrow_g = row0 + warp * 16 + g;

  for (int t = 0; t < n_tiles; ++t) {
    const int st = t & 1;
    if (t + 1 < n_tiles) {
      load_kv(t + 1, st ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // tile t landed; every warp is done with the previous fp16 tiles
    if (t == 0) {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const int r = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
        ldmatrix_x4(qf[kk], sq + r * kQStride + kk * 16 + (lane >> 4) * 8);
      }
    }
    // fp8 -> fp16, once per tile.
#pragma unroll
    for (int i = tid; i < 2 * kBN * 4; i += NT) {
      const int which = i / (kBN * 4), rem = i % (kBN * 4);
      const int r = rem >> 2, c = (rem & 3) * 16;
      const uint4 x = *reinterpret_cast<const uint4*>(raw(st, which) + r * kD + c);
      const uint32_t w[4] = {x.x, x.y, x.z, x.w};
      uint32_t h[8];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        h[2 * e] = fp8x2_to_half2((uint16_t)(w[e] & 0xffffu));
        h[2 * e + 1] = fp8x2_to_half2((uint16_t)(w[e] >> 16));
      }
      __half* dst = which ? sv : sk;
      *reinterpret_cast<uint4*>(dst + kv_idx(r, c)) = make_uint4(h[0], h[1], h[2], h[3]);
      *reinterpret_cast<uint4*>(dst + kv_idx(r, c + 8)) = make_uint4(h[4], h[5], h[6], h[7]);
    }
    __syncthreads();

    float s[8][4];
#pragma unroll
    for (int j = 0; j < 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int kk = 0; kk < 4; kk += 2) {
        uint32_t b[4];
        ldmatrix_x4(b, sk + kv_idx(j * 8 + (lane & 7), kk * 16 + (lane >> 3) * 8));
        mma_f32(s[j], qf[kk], b[0], b[1]);
        mma_f32(s[j], qf[kk + 1], b[2], b[3]);
      }
    }

    const int key0 = t * kBN;
    const bool need_mask = key0 + kBN > S || (p.causal && key0 + kBN - 1 > row0 + warp * 16);
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
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      o[j][0] *= alpha[0];
      o[j][1] *= alpha[0];
      o[j][2] *= alpha[1];
      o[j][3] *= alpha[1];
    }

#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint32_t pa[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]),
                              pack_half2(s[2 * kk][2], s[2 * kk][3]),
                              pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int j = 0; j < 8; j += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, sv + kv_idx(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                         j * 8 + (lane >> 4) * 8));
        mma_f32(o[j], pa, b[0], b[1]);
        mma_f32(o[j + 1], pa, b[2], b[3]);
      }
    }
  }

  store_o(&o[0][0], l_r, p.out_scale, p.o + head, qrow_g, q4, S);
}


// ---------------------------------------------------------------------------------------------
// sm_90a (FP8_WGMMA=1, the default), warp-specialised in FlashAttention-3's way. A block is 3
// warpgroups and owns BM = 128 query rows. Warpgroup 0 is the producer: it loads the fp8 K and V
// bytes of each 128-key tile straight into registers (ld.global.nc, two tiles ahead), converts
// them there to fp16 (cvt.rn.f16x2.e4m3x2) and stores them once into a ring of FP8_WS_STAGES
// fp16 K/V stages, then arrives on the stage's `full` mbarrier; no block-wide barrier anywhere.
// (An fp8 staging ring in shared memory filled by cp.async, the earlier design, cost 3 % more
// time on the H100 for 61 KiB more shared memory and twice the shared traffic of the producer.)
// K and V are both stored [key][d] (128 B rows): K is the K-major B of S = Q K^T, V the
// MN-major ("transposed") B of O += P V, so neither needs a transpose. Warpgroups 1 and 2 are
// the consumers, 64 query rows each: S on wgmma m64n128k16 (Q from registers, K from shared
// memory), the online softmax on the accumulator registers, P V on wgmma m64n64k16 with P
// straight from registers. S_t and P_{t-1} V_{t-1} are issued together, meant to let the
// softmax of tile t run while P V_{t-1} does; but ptxas hoists a wgmma wait to the top of its
// basic block, so the wait for P V_{t-1} lands ahead of the exponentials and only the two
// consumers overlap each other. Forcing the overlap (P double-buffered, FA3's rescale order,
// the wait moved past the next tile's try-wait loop into another basic block, 208 consumer
// registers) put it in the SASS and measured 4 % slower
// (docs/evidence/gpu-2026-11-26-fp8-lazy-rescale.log). Timed inside the loop (clock64 stamps,
// kernels/suite/NOTES.md), a consumer spent ~450 cycles a tile
// issuing its 12 wgmmas (an instruction with A in registers holds the warp until the tensor
// core takes it), ~1,300-1,900 in the softmax (the SFU stream, stalled by adds and packs that
// ptxas interleaves with it) and ~400 on waits and bookkeeping; the softmaxes of the two
// consumers mostly overlap. The lazy rescale (FP8_LAZY_RESCALE) takes the row maxima, their
// shuffles, alpha and O's rescaling off that path: 10 % faster. FP8_PINGPONG=1 makes the
// consumers take turns with named barriers (one issuing its products while the other is in its
// softmax): 8 % slower with this softmax.
namespace wg {

#ifndef FP8_WS_STAGES
#define FP8_WS_STAGES 4
#endif
#ifndef FP8_PINGPONG
#define FP8_PINGPONG 0
#endif
#ifndef FP8_PERSISTENT
#define FP8_PERSISTENT 1
#endif
#ifndef FP8_Q_REGS
#define FP8_Q_REGS 1
#endif
#ifndef FP8_LAZY_RESCALE
#define FP8_LAZY_RESCALE FP8_Q_REGS
#endif
#ifndef FP8_PRODUCER_REGS
#define FP8_PRODUCER_REGS 104
#endif
#ifndef FP8_CONSUMER_REGS
#define FP8_CONSUMER_REGS 192
#endif
static_assert(FP8_PRODUCER_REGS % 8 == 0 && FP8_CONSUMER_REGS % 8 == 0 && FP8_PRODUCER_REGS >= 24 &&
                  FP8_CONSUMER_REGS <= 256 && FP8_PRODUCER_REGS + 2 * FP8_CONSUMER_REGS <= 3 * 168,
              "FP8_PRODUCER_REGS, FP8_CONSUMER_REGS: multiples of 8 within the block's 3 x 168");
#if FP8_LAZY_RESCALE && !FP8_Q_REGS
#error "FP8_LAZY_RESCALE recomputes S from Q's register fragments: it needs FP8_Q_REGS=1"
#endif
#ifndef FP8_RESCALE_TEST
#define FP8_RESCALE_TEST 0
#endif
constexpr int BM = 128, BN = 128, kThreads = 384;
constexpr int kStages = FP8_WS_STAGES;  // fp16 K+V stages (measurements: kernels/suite/NOTES.md)
constexpr int kTile = BN * 128;         // one fp16 [128 keys][64 d] tile
constexpr int kQBytes = BM * 128;
static_assert(kStages >= 2 && kStages <= 6, "FP8_WS_STAGES: 2 to 6");

__host__ __device__ constexpr size_t smem_bytes() {
  return 1024 + (size_t)kQBytes + (size_t)kStages * 2 * kTile;
}
static_assert(smem_bytes() <= 227 * 1024, "fp8_sdpa wgmma: shared memory over the 227 KiB limit");

#if FP8_WGMMA_BODY
// Byte offset of 16-byte chunk c (0..7) of row r in a [rows][128 B] tile.
__device__ __forceinline__ uint32_t tile_off(int r, int c) {
#if USE_SMEM_SWIZZLE_XOR
  return (uint32_t)(r * 128 + ((c ^ (r & 7)) << 4));
#else
  return (uint32_t)((((r >> 3) << 3) + c) * 128 + ((r & 7) << 4));
#endif
}
__device__ __forceinline__ uint64_t make_desc(uint32_t saddr) {
  uint64_t d = (uint64_t)((saddr & 0x3FFFF) >> 4);
#if USE_SMEM_SWIZZLE_XOR
  d |= (uint64_t)1 << 16;            // leading byte offset (unused for swizzled K-major)
  d |= (uint64_t)(1024 >> 4) << 32;  // stride byte offset: 8-row groups
  d |= (uint64_t)1 << 62;            // 128 B swizzle
#else
  d |= (uint64_t)(128 >> 4) << 16;   // leading byte offset: next core matrix along K
  d |= (uint64_t)(1024 >> 4) << 32;  // stride byte offset: next 8-row group
#endif
  return d;
}
// One k16 step along K (16 halves = 32 bytes) in descriptor units of 16 bytes.
constexpr uint64_t kKStep = USE_SMEM_SWIZZLE_XOR ? 2 : 16;

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// MN-major descriptor of a [key][d] fp16 tile read as the B (keys x d) of P V.
__device__ __forceinline__ uint64_t make_desc_mn(uint32_t saddr) {
  uint64_t d = (uint64_t)((saddr & 0x3FFFF) >> 4);
#if USE_SMEM_SWIZZLE_XOR
  d |= (uint64_t)(8192 >> 4) << 16;  // leading byte offset: next 64 d (unused: D = 64)
  d |= (uint64_t)(1024 >> 4) << 32;  // stride byte offset: next 8 keys
  d |= (uint64_t)1 << 62;            // 128 B swizzle
#else
  d |= (uint64_t)(1024 >> 4) << 16;  // leading byte offset: next 8 keys
  d |= (uint64_t)(128 >> 4) << 32;   // stride byte offset: next 8 d
#endif
  return d;
}
constexpr uint64_t kVStep = 2048 >> 4;  // 16 keys

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, int parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void bar_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
#if FP8_PINGPONG
__device__ __forceinline__ void bar_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
#endif
#if !FP8_Q_REGS
__device__ __forceinline__ void wgmma_ss_m64n128k16(float (&d)[64], uint64_t da, uint64_t db, int acc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(acc));
}
#endif
#if FP8_Q_REGS
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
// S = Q K^T with Q (A) from registers and K (B) K-major.
__device__ __forceinline__ void wgmma_rs_m64n128k16(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int acc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
}
#endif
// O += P V with P (A) from registers and V (B) MN-major: imm-trans-b = 1.
__device__ __forceinline__ void wgmma_rs_m64n64k16_tb(float (&d)[32], const uint32_t (&a)[4], uint64_t db) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
#endif  // FP8_WGMMA_BODY

__global__ void __launch_bounds__(kThreads, 1) fp8_sdpa_wgmma(Params p) {
#if FP8_WGMMA_BODY
  // full[s], empty[s]: the kernel's only static shared memory (the host reads its size to know
  // this body was built).
  __shared__ __align__(8) uint64_t bars[2 * kStages];
  extern __shared__ unsigned char dsmem[];
  const uint32_t base = (smem_u32(dsmem) + 1023u) & ~1023u;
  unsigned char* gbase = dsmem + (base - smem_u32(dsmem));
  const uint32_t sq = base, skv = sq + kQBytes;
  unsigned char* gkv = gbase + kQBytes;
  auto full = [&](int s) { return smem_u32(&bars[s]); };
  auto empty = [&](int s) { return smem_u32(&bars[kStages + s]); };

  const int tid = threadIdx.x, wgi = tid >> 7, wtid = tid & 127;
  const int S = p.S;
  // Work unit u: query block qb of head bh (heads fastest; causal: the longest rows first).
  // Block b takes units b, b + gridDim.x, ...: one each when the grid covers them all, several
  // when the kernel is persistent, and then the producer runs on into the next unit's tiles
  // while the consumers finish the last one's.
  const int nq = (S + BM - 1) / BM, n_units = nq * p.bh;
  auto unit = [&](int u, int& row0, size_t& head) {
    const int qi = u / p.bh, qb = p.causal ? nq - 1 - qi : qi;
    row0 = qb * BM;
    head = (size_t)(u - qi * p.bh) * S * kD;
    const int n = (S + BN - 1) / BN;
    return p.causal ? min(n, (row0 + BM - 1) / BN + 1) : n;
  };

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full(s), 128);  // every producer thread, after its stores
      mbar_init(empty(s), 8);   // lane 0 of every consumer warp, after its products
    }
  }
  __syncthreads();

  if (wgi == 0) {
#if FP8_Q_REGS
    setmaxnreg_dec<FP8_PRODUCER_REGS>();  // hand registers to the consumers (Q fragments)
#endif
    // Producer: fp8 K/V rows come into registers (ld.global.nc, two tiles ahead), are converted
    // there and stored once as fp16; no fp8 staging in shared memory. Load i of a warp covers
    // rows (4 i + warp) * 8 + (lane & 7), 16-byte chunk lane >> 3: 512 contiguous bytes per
    // instruction, and the 8 threads of each store phase hit 8 different rows (no bank conflict
    // in either layout).
    const int lane = tid & 31, pw = wtid >> 5, ch = lane >> 3;
    auto row_of = [&](int i) { return (4 * i + pw) * 8 + (lane & 7); };
    // A position in this block's stream of (unit, tile).
    struct Pos {
      int u, t, n;
      size_t head;
    };
    auto start = [&](Pos& q, int u) {
      q.u = u;
      q.t = 0;
      int row0;
      if (u < n_units) q.n = unit(u, row0, q.head);
    };
    auto advance = [&](Pos& q) {
      if (++q.t == q.n) start(q, q.u + (int)gridDim.x);
    };
    auto load = [&](uint4 (&b)[8], const Pos& q) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int key = q.t * BN + row_of(i);
        const bool ok = key < S;
        const size_t off = q.head + (size_t)(ok ? key : 0) * kD + ch * 16;
        b[i] = ok ? __ldg(reinterpret_cast<const uint4*>(p.k + off)) : make_uint4(0, 0, 0, 0);
        b[4 + i] = ok ? __ldg(reinterpret_cast<const uint4*>(p.v + off)) : make_uint4(0, 0, 0, 0);
      }
    };
    auto convert_store = [&](const uint4 (&b)[8], int g) {  // g: the block's tile count so far
      const int s = g % kStages;
      if (g >= kStages) mbar_wait(empty(s), (g / kStages - 1) & 1);
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        unsigned char* dst = gkv + (s * 2 + (k >> 2)) * kTile;
        const int r = row_of(k & 3);
        const uint32_t w[4] = {b[k].x, b[k].y, b[k].z, b[k].w};
        uint32_t h[8];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          h[2 * e] = fp8x2_to_half2((uint16_t)(w[e] & 0xffffu));
          h[2 * e + 1] = fp8x2_to_half2((uint16_t)(w[e] >> 16));
        }
        *reinterpret_cast<uint4*>(dst + tile_off(r, 2 * ch)) = make_uint4(h[0], h[1], h[2], h[3]);
        *reinterpret_cast<uint4*>(dst + tile_off(r, 2 * ch + 1)) = make_uint4(h[4], h[5], h[6], h[7]);
      }
      fence_proxy_async();  // the fp16 stage is read by wgmma
      mbar_arrive(full(s));
    };
    Pos ld, cv;
    start(ld, blockIdx.x);
    cv = ld;
    uint4 b0[8], b1[8];
    if (ld.u < n_units) { load(b0, ld); advance(ld); }
    if (ld.u < n_units) { load(b1, ld); advance(ld); }
    for (int g = 0; cv.u < n_units;) {
      convert_store(b0, g++);
      advance(cv);
      if (ld.u < n_units) { load(b0, ld); advance(ld); }
      if (cv.u >= n_units) break;
      convert_store(b1, g++);
      advance(cv);
      if (ld.u < n_units) { load(b1, ld); advance(ld); }
    }
    return;
  }

  // Consumers: in each unit, warpgroup c owns query rows row0 + 64 c .. + 63.
#if FP8_Q_REGS
  setmaxnreg_inc<FP8_CONSUMER_REGS>();
#endif
  const int c = wgi - 1;
  const int warp = wtid >> 5, lane = tid & 31, g = lane >> 2, q4 = lane & 3;
#if FP8_PINGPONG
  if (c == 0) bar_arrive(3, 256);  // the first consumer goes first
  int g_total = 0;                 // this block's tiles: the last issue hands no turn on
  for (int u = blockIdx.x; u < n_units; u += gridDim.x) {
    int r;
    size_t h;
    g_total += unit(u, r, h);
  }
#endif
#if FP8_Q_REGS
  uint32_t qa[kD / 16][4];  // this warp's 16 Q rows as wgmma A fragments, loaded once per unit
#else
  const uint64_t dq = make_desc(sq + c * 64 * 128);
#endif
  // The unit's first row and tiles, and the block's tile count at the unit's start.
  int row0 = 0, n_tiles = 0, gt0 = 0;
  size_t head = 0;
  float o[32];
  float m_r[2], l_r[2];
  float s[64];
  uint32_t pa[8][4];
  float alpha[2];

#if FP8_LAZY_RESCALE
  bool rescaled = true;  // whether the last softmax moved a running maximum (O needs alpha)
#endif
  auto rescale_o = [&]() {
#if FP8_LAZY_RESCALE
    if (!rescaled) return;
#endif
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      o[4 * j] *= alpha[0];
      o[4 * j + 1] *= alpha[0];
      o[4 * j + 2] *= alpha[1];
      o[4 * j + 3] *= alpha[1];
    }
  };
  // S_t = Q K_t^T issued (and, from the second tile on, P_{t-1} V_{t-1} behind it).
  auto issue = [&](int t) {
    const int gt = gt0 + t, st = gt % kStages;
    mbar_wait(full(st), (gt / kStages) & 1);
#if FP8_PINGPONG
    bar_sync(3 + c, 256);
#endif
    wgmma_fence();
    const uint64_t dk = make_desc(skv + st * 2 * kTile);
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
#if FP8_Q_REGS
      wgmma_rs_m64n128k16(s, qa[kk], dk + kk * kKStep, kk);
#else
      wgmma_ss_m64n128k16(s, dq + kk * kKStep, dk + kk * kKStep, kk);
#endif
    }
    wgmma_commit();
    if (t > 0) {
      const uint64_t dv = make_desc_mn(skv + ((gt - 1) % kStages * 2 + 1) * kTile);
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) wgmma_rs_m64n64k16_tb(o, pa[kk], dv + kk * kVStep);
      wgmma_commit();
    }
#if FP8_PINGPONG
    if (!(c == 1 && gt == g_total - 1)) bar_arrive(3 + (c ^ 1), 256);
#endif
  };
  int wrow0 = 0, qrow_g = 0;
  // Keys past S, and in causal attention keys after the row, to -inf in tile t's scores.
  auto mask_s = [&](int t) {
    const int key0 = t * BN;
    const bool need_mask = key0 + BN > S || (p.causal && key0 + BN - 1 > wrow0);
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
  };
#if FP8_LAZY_RESCALE
  // This warp's 16 rows of S_t = Q K_t^T once more, on mma.sync from Q's fragments and the
  // tile's K, still in its stage; mma.m16n8k16's accumulators have the wgmma layout (s[4 j + e]: keys
  // 8 j + 2 q4 + (e & 1), rows g + 8 (e >> 1)).
  auto recompute_s = [&](int t) {
    const unsigned char* kt = gkv + (size_t)((gt0 + t) % kStages) * 2 * kTile;
    const auto& qf = qa;  // Q's wgmma A fragments have mma.m16n8k16's A layout
#pragma unroll
    for (int i = 0; i < 64; ++i) s[i] = 0.f;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int kk = 0; kk < kD / 16; kk += 2) {
        uint32_t b[4];
        ldmatrix_x4(b, kt + tile_off(j * 8 + (lane & 7), 2 * kk + (lane >> 3)));
        float* d = &s[4 * j];
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%10,%11,%12,%13}, "
            "{%14,%15}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(qf[kk][0]), "r"(qf[kk][1]), "r"(qf[kk][2]), "r"(qf[kk][3]), "r"(b[0]), "r"(b[1]),
              "r"(qf[kk + 1][0]), "r"(qf[kk + 1][1]), "r"(qf[kk + 1][2]), "r"(qf[kk + 1][3]),
              "r"(b[2]), "r"(b[3]));
      }
  };
#endif
  // The exact softmax of tile t on s (fp32 scores in, fp32 probabilities out): the tile's row
  // maxima first, then alpha, m and l updated.
  auto softmax = [&](int t) {
    mask_s(t);
    // Both rows at once: each row's maximum as a tree (depth 5, not a chain of 16), the two
    // rows' shuffles side by side, then all 64 exponentials, and only then the sums (four
    // partial sums a row). Against one chain a row, each exponential summed as it came: 0.7 %
    // faster, 3 % with FP8_PINGPONG=0 (kernels/suite/NOTES.md).
    float mx[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m8[8];
#pragma unroll
      for (int j = 0; j < 8; ++j)
        m8[j] = fmaxf(fmaxf(s[8 * j + 2 * h], s[8 * j + 2 * h + 1]),
                      fmaxf(s[8 * j + 4 + 2 * h], s[8 * j + 5 + 2 * h]));
#pragma unroll
      for (int w = 4; w >= 1; w >>= 1)
#pragma unroll
        for (int j = 0; j < w; ++j) m8[j] = fmaxf(m8[j], m8[j + w]);
      mx[h] = m8[0];
    }
#pragma unroll
    for (int x = 1; x <= 2; x <<= 1)
#pragma unroll
      for (int h = 0; h < 2; ++h) mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], x));
    float m_use[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float m_new = fmaxf(m_r[h], mx[h] * p.scale_log2);
      m_use[h] = m_new == -INFINITY ? 0.f : m_new;
      alpha[h] = fast_exp2(m_r[h] - m_use[h]);
      m_r[h] = m_new;
    }
#pragma unroll
    for (int i = 0; i < 64; ++i) s[i] = fast_exp2(s[i] * p.scale_log2 - m_use[(i >> 1) & 1]);
    fence_regs(s);
    float sum[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int i = 0; i < 64; ++i) sum[(i >> 1) & 1][((i >> 2) & 1) * 2 + (i & 1)] += s[i];
#pragma unroll
    for (int h = 0; h < 2; ++h)
      l_r[h] = l_r[h] * alpha[h] + ((sum[h][0] + sum[h][1]) + (sum[h][2] + sum[h][3]));
  };
  auto pack = [&]() {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {  // keys 16 kk ..: accumulator blocks 2 kk, 2 kk + 1
      pa[kk][0] = pack_half2(s[8 * kk + 0], s[8 * kk + 1]);
      pa[kk][1] = pack_half2(s[8 * kk + 2], s[8 * kk + 3]);
      pa[kk][2] = pack_half2(s[8 * kk + 4], s[8 * kk + 5]);
      pa[kk][3] = pack_half2(s[8 * kk + 6], s[8 * kk + 7]);
    }
  };
#if FP8_LAZY_RESCALE
  // From the second tile on, the exponentials are taken against the running maxima before this
  // tile's maxima are known (spec_exps), and checked once P is packed through its row sums
  // (spec_check): while no thread's 32 probabilities of a row add up to more than 2^8 (so none
  // exceeds 2^8), the maxima stand and O is not rescaled (FlashAttention-4's conditional
  // rescaling, without the maxima on the critical path). Otherwise each row is brought under
  // its largest probability (rare: a maximum grew by 2^8), or, if a probability overflowed, S
  // is computed again and takes the exact softmax.
  auto spec_exps = [&](int t) {
    mask_s(t);
#pragma unroll
    for (int i = 0; i < 64; ++i) s[i] = fast_exp2(s[i] * p.scale_log2 - m_r[(i >> 1) & 1]);
    fence_regs(s);
  };
  auto spec_check = [&](int t) {
    float rs[2];
    float sum[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int i = 0; i < 64; ++i) sum[(i >> 1) & 1][((i >> 2) & 1) * 2 + (i & 1)] += s[i];
#pragma unroll
    for (int h = 0; h < 2; ++h) rs[h] = (sum[h][0] + sum[h][1]) + (sum[h][2] + sum[h][3]);
    constexpr float kLimit = FP8_RESCALE_TEST ? -1.f : 256.f;
    rescaled = !__all_sync(0xffffffffu, rs[0] <= kLimit && rs[1] <= kLimit);
    if (!rescaled) {
      alpha[0] = alpha[1] = 1.f;
      l_r[0] += rs[0];
      l_r[1] += rs[1];
      return;
    }
    constexpr float kFinite = FP8_RESCALE_TEST == 2 ? -1.f : 3.0e38f;
    if (__all_sync(0xffffffffu, rs[0] <= kFinite && rs[1] <= kFinite)) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mp = 0.f;
#pragma unroll
        for (int i = 0; i < 64; ++i)
          if (((i >> 1) & 1) == h) mp = fmaxf(mp, s[i]);
        mp = fmaxf(mp, __shfl_xor_sync(0xffffffffu, mp, 1));
        mp = fmaxf(mp, __shfl_xor_sync(0xffffffffu, mp, 2));
        // The row's new maximum, m_r + log2(mp), and the factor that moves what was summed
        // against m_r onto it, kept consistent with each other (both through the SFU).
        float lg = 0.f;
        if (mp > 1.f) asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(lg) : "f"(mp));
        alpha[h] = fast_exp2(-lg);
        m_r[h] += lg;
        l_r[h] = (l_r[h] + rs[h]) * alpha[h];
      }
#pragma unroll
      for (int i = 0; i < 64; ++i) s[i] *= alpha[(i >> 1) & 1];
    } else {
      recompute_s(t);
      softmax(t);
    }
    pack();
  };
#endif
  auto release = [&](int t) {  // the stage of the unit's tile t
    if (lane == 0) mbar_arrive(empty((gt0 + t) % kStages));
  };

  for (int u = blockIdx.x; u < n_units; u += gridDim.x, gt0 += n_tiles) {
    n_tiles = unit(u, row0, head);
    wrow0 = row0 + c * 64 + warp * 16;
    qrow_g = wrow0 + g;
    {
      // This warpgroup's Q rows; its products of the previous unit, the only readers of these
      // rows, have completed.
      const __half* Q = p.q + head;
#pragma unroll
      for (int i = wtid; i < 64 * 8; i += 128) {
        const int r = c * 64 + (i >> 3), ch = i & 7;
        const bool ok = row0 + r < S;
        cp_async16(gbase + tile_off(r, ch), Q + (size_t)(ok ? row0 + r : 0) * kD + ch * 8, ok);
      }
      cp_async_commit();
      cp_async_wait<0>();
      fence_proxy_async();
      bar_sync(1 + c, 128);
#if FP8_Q_REGS
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk)
        ldmatrix_x4(qa[kk], gbase + tile_off(c * 64 + warp * 16 + (lane & 15), 2 * kk + (lane >> 4)));
#endif
    }
#pragma unroll
    for (int i = 0; i < 32; ++i) o[i] = 0.f;
    m_r[0] = m_r[1] = -INFINITY;
    l_r[0] = l_r[1] = 0.f;

    issue(0);
    wgmma_wait<0>();
    fence_regs(s);
    softmax(0);
    pack();
    for (int t = 1; t < n_tiles; ++t) {
      issue(t);
      wgmma_wait<1>();  // S_t is in; P V_{t-1} may still run
      fence_regs(s);
#if FP8_LAZY_RESCALE
      spec_exps(t);
#else
      softmax(t);
#endif
      wgmma_wait<0>();
      fence_regs(o);
      release(t - 1);
#if FP8_LAZY_RESCALE
      pack();
      spec_check(t);
#endif
      rescale_o();
#if !FP8_LAZY_RESCALE
      pack();
#endif
    }
    {
      wgmma_fence();
      const uint64_t dv = make_desc_mn(skv + ((gt0 + n_tiles - 1) % kStages * 2 + 1) * kTile);
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) wgmma_rs_m64n64k16_tb(o, pa[kk], dv + kk * kVStep);
      wgmma_commit();
      wgmma_wait<0>();
      fence_regs(o);
      release(n_tiles - 1);
    }

    store_o(o, l_r, p.out_scale, p.o + head, qrow_g, q4, S);
  }
#endif  // FP8_WGMMA_BODY
}

bool available(int dev) {
  static int cached[64];  // 0 unknown, 1 yes, 2 no
  if (dev < 0 || dev >= 64) return false;
  if (cached[dev] == 0) {
    int major = 0;
    cudaFuncAttributes fa{};
    const bool ok =
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
        major == 9 && cudaFuncGetAttributes(&fa, fp8_sdpa_wgmma) == cudaSuccess &&
        fa.sharedSizeBytes > 0;
    cached[dev] = ok ? 1 : 2;
  }
  return cached[dev] == 1;
}

int launch(const kfleet_attention_args* a, const Params& p, gpuStream_t stream) {
  if (cudaFuncSetAttribute(fp8_sdpa_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)smem_bytes()) != cudaSuccess)
    return -1;
  const long units = (long)((a->seq_len + BM - 1) / BM) * a->batch * a->heads;
  long grid = units;
  if (FP8_PERSISTENT) {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    grid = sms > 0 && sms < units ? sms : units;
  }
  if (grid > 0x7fffffffL) return -1;
  fp8_sdpa_wgmma<<<(unsigned)grid, kThreads, smem_bytes(), stream>>>(p);
  return 0;
}

}  // namespace wg

template <int WARPS>
int launch(const kfleet_attention_args* a, const Params& p, gpuStream_t stream) {
  constexpr int BM = 16 * WARPS;
  constexpr size_t bytes = smem_bytes<WARPS>();
  if (cudaFuncSetAttribute(fp8_sdpa_kernel<WARPS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)bytes) != cudaSuccess)
    return KFLEET_UNSUPPORTED;
  const dim3 grid((unsigned)((a->seq_len + BM - 1) / BM), (unsigned)(a->batch * a->heads));
  fp8_sdpa_kernel<WARPS><<<grid, WARPS * 32, bytes, stream>>>(p);
  return KFLEET_OK;
}

}  // namespace

extern "C" int kfleet_attention_launch(const kfleet_attention_args* a, gpuStream_t stream) {
  if (a->abi_version != KFLEET_ABI_VERSION || a->head_dim != kD || a->seq_len < 1 ||
      a->q_dtype != KFLEET_FP16 || a->kv_dtype != KFLEET_FP8_E4M3 ||
      a->out_dtype != KFLEET_FP16 || (a->causal != 0 && a->causal != 1))
    return KFLEET_UNSUPPORTED;
  Params p;
  p.q = static_cast<const __half*>(a->q);
  p.k = static_cast<const uint8_t*>(a->k);
  p.v = static_cast<const uint8_t*>(a->v);
  p.o = static_cast<__half*>(a->o);
  p.S = a->seq_len;
  p.causal = a->causal;
  p.bh = a->batch * a->heads;
  p.scale_log2 = a->softmax_scale * a->q_scale * a->k_scale * kLog2e;
  p.out_scale = a->v_scale;
  if (FP8_WGMMA) {
    int dev = -1;
    if (cudaGetDevice(&dev) == cudaSuccess && wg::available(dev) && wg::launch(a, p, stream) == 0)
      return KFLEET_OK;
  }
  int warps = FP8_WARPS;
  if (warps == 0) {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const long blocks8 = (long)((a->seq_len + 127) / 128) * a->batch * a->heads;
    warps = blocks8 >= 2L * sms ? 8 : 4;
  }
  if (warps == 4) return launch<4>(a, p, stream);
  if (warps == 8) return launch<8>(a, p, stream);
  return KFLEET_UNSUPPORTED;
}
