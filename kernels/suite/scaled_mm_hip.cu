// scaled_mm_hip: fp8-e4m3 scaled GEMM for RDNA 3.5 (gfx1151) with WMMA (kfleet ABI, family
// scaled_mm; compiled as HIP by clang/hipcc).
//
// The fp8 -> fp16 conversion lives inside the GEMM path, as seed 002 requires: fp8 bytes go
// global -> LDS unconverted (half the bytes of fp16), each wave reads its fragment rows out of
// LDS as fp8 and converts them in registers, and the fp16 fragments feed
// v_wmma_f32_16x16x16_f16 (fp32 accumulate). No tensor is ever pre-cast in global memory.
//
// Block: 256 threads = 8 wave32 waves in a 2 x 4 grid, a 128 x 128 output tile, 32-byte (= 32
// fp8) K slices double-buffered in LDS (the next slice's global loads are in flight in registers
// while the current one is multiplied). Wave tile 64 x 32 = 4 x 2 WMMA tiles.
//
// fp8 -> fp16: e4m3's exponent and mantissa bits shifted into fp16's fields give the value
// times 2^-8 exactly (subnormals included), so one packed multiply by 256 finishes two values.
// NaN inputs (0x7F/0xFF) come out as 480 (seed 002's policy allows relaxed NaN behaviour; the
// harness's inputs are finite).
//
// Supported: any M and N, K a multiple of 16, b_layout NK (B given as [N, K]); fp16 or bf16 out,
// optional bias. Other combinations answer KFLEET_UNSUPPORTED.
#include "kfleet_harness/kernel.hpp"

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 32;
constexpr int kThreads = 256;
constexpr int kRowBytes = kBK + 16;  // LDS row stride: 48 bytes spreads 16-byte reads over banks

typedef _Float16 half16_t __attribute__((ext_vector_type(16)));
typedef _Float16 half2_t __attribute__((ext_vector_type(2)));
typedef float float8_t __attribute__((ext_vector_type(8)));

struct Params {
  const uint8_t* a;
  const uint8_t* b;
  const void* bias;
  void* d;
  int M, N, K;
  float scale;
  int bf16;
};

// Four fp8 bytes -> four fp16 values (two packed pairs).
__device__ __forceinline__ void fp8x4_to_half(uint32_t w, half2_t& lo, half2_t& hi) {
  const uint32_t l = ((w & 0x80u) << 8) | ((w & 0x7Fu) << 7) | ((w & 0x8000u) << 16) |
                     ((w & 0x7F00u) << 15);
  const uint32_t h = ((w & 0x800000u) >> 8) | ((w & 0x7F0000u) >> 9) | (w & 0x80000000u) |
                     ((w & 0x7F000000u) >> 1);
  const half2_t k256 = {(_Float16)256.0f, (_Float16)256.0f};
  lo = __builtin_bit_cast(half2_t, l) * k256;
  hi = __builtin_bit_cast(half2_t, h) * k256;
}

__device__ __forceinline__ half16_t frag_from_fp8(uint4 x) {
  half16_t f;
  const uint32_t w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    half2_t lo, hi;
    fp8x4_to_half(w[e], lo, hi);
    f[4 * e + 0] = lo[0];
    f[4 * e + 1] = lo[1];
    f[4 * e + 2] = hi[0];
    f[4 * e + 3] = hi[1];
  }
  return f;
}

__device__ __forceinline__ uint16_t to_out(float x, bool bf16) {
  return bf16 ? kfleet_float_to_bf16_bits(x) : kfleet_float_to_half_bits(x);
}

__global__ void __launch_bounds__(kThreads) scaled_mm_wmma(Params p) {
  __shared__ __attribute__((aligned(16))) uint8_t lds_a[2][kBM * kRowBytes];
  __shared__ __attribute__((aligned(16))) uint8_t lds_b[2][kBN * kRowBytes];

  const int tid = threadIdx.x, wave = tid >> 5, lane = tid & 31;
  const int wm = wave >> 2, wn = wave & 3;  // wave tile origin (64 wm, 32 wn)
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;

  // Each thread moves one 16-byte chunk of A and one of B per K slice.
  const int lr = tid >> 1, lc = (tid & 1) * 16;
  const bool a_row_ok = m0 + lr < p.M, b_row_ok = n0 + lr < p.N;
  const uint8_t* ga = p.a + (size_t)(a_row_ok ? m0 + lr : 0) * p.K + lc;
  const uint8_t* gb = p.b + (size_t)(b_row_ok ? n0 + lr : 0) * p.K + lc;
  auto fetch = [&](int kt, uint4& ra, uint4& rb) {
    const int k = kt * kBK + lc;
    const bool kok = k < p.K;  // K % 16 == 0: a chunk is all in or all out
    const uint4 z = make_uint4(0u, 0u, 0u, 0u);
    ra = (a_row_ok && kok) ? *reinterpret_cast<const uint4*>(ga + (size_t)kt * kBK) : z;
    rb = (b_row_ok && kok) ? *reinterpret_cast<const uint4*>(gb + (size_t)kt * kBK) : z;
  };
  auto stash = [&](int st, const uint4& ra, const uint4& rb) {
    *reinterpret_cast<uint4*>(&lds_a[st][lr * kRowBytes + lc]) = ra;
    *reinterpret_cast<uint4*>(&lds_b[st][lr * kRowBytes + lc]) = rb;
  };

  float8_t acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[i][j][e] = 0.f;

  const int k_tiles = (p.K + kBK - 1) / kBK;
  uint4 ra, rb;
  fetch(0, ra, rb);
  stash(0, ra, rb);
  __syncthreads();

  const int fr = lane & 15;  // fragment row (A) / column (B) this lane holds; lanes 16-31 mirror
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int st = kt & 1;
    const bool more = kt + 1 < k_tiles;
    if (more) fetch(kt + 1, ra, rb);  // in flight while this slice is multiplied
#pragma unroll
    for (int ks = 0; ks < kBK / 16; ++ks) {
      half16_t af[4], bfr[2];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        af[i] = frag_from_fp8(*reinterpret_cast<const uint4*>(
            &lds_a[st][(wm * 64 + i * 16 + fr) * kRowBytes + ks * 16]));
#pragma unroll
      for (int j = 0; j < 2; ++j)
        bfr[j] = frag_from_fp8(*reinterpret_cast<const uint4*>(
            &lds_b[st][(wn * 32 + j * 16 + fr) * kRowBytes + ks * 16]));
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
          acc[i][j] = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(af[i], bfr[j], acc[i][j]);
    }
    if (more) stash(st ^ 1, ra, rb);
    __syncthreads();
  }

  // D element e of a lane: row 2e + lane/16, column lane%16 of the 16 x 16 tile.
  const bool bf16 = p.bf16 != 0;
  uint16_t* D = static_cast<uint16_t*>(p.d);
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int col = n0 + wn * 32 + j * 16 + fr;
    if (col >= p.N) continue;
    float bias = 0.f;
    if (p.bias) {
      const uint16_t x = static_cast<const uint16_t*>(p.bias)[col];
      bias = bf16 ? kfleet_bf16_bits_to_float(x) : kfleet_half_bits_to_float(x);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int row = m0 + wm * 64 + i * 16 + 2 * e + (lane >> 4);
        if (row < p.M) D[(size_t)row * p.N + col] = to_out(acc[i][j][e] * p.scale + bias, bf16);
      }
  }
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
  const dim3 grid((unsigned)((a->n + kBN - 1) / kBN), (unsigned)((a->m + kBM - 1) / kBM));
  hipLaunchKernelGGL(scaled_mm_wmma, grid, dim3(kThreads), 0, stream, p);
  return KFLEET_OK;
}
