// Flash-attention style forward pass for S <= 512, one thread block per (batch, head, query
// tile). Deliberately plain: online softmax over K/V tiles staged in shared memory.
// O_ACCUM_HALF: accumulate the output in half precision (the iter1 experiment) instead of fp32.
#include <cuda_fp16.h>

#ifndef TILE_Q
#define TILE_Q 64
#endif
#ifndef TILE_K
#define TILE_K 64
#endif
#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif

#if O_ACCUM_HALF
typedef __half acc_t;
__device__ inline acc_t to_acc(float x) { return __float2half(x); }
__device__ inline float from_acc(acc_t x) { return __half2float(x); }
#else
typedef float acc_t;
__device__ inline acc_t to_acc(float x) { return x; }
__device__ inline float from_acc(acc_t x) { return x; }
#endif

// q, k, v, o: [B, H, S, D] contiguous, D == HEAD_DIM. grid = (ceil(S / TILE_Q), H, B).
extern "C" __global__ void fa_s512_v3(const __half* __restrict__ q, const __half* __restrict__ k,
                                      const __half* __restrict__ v, __half* __restrict__ o,
                                      int S, float scale) {
  __shared__ __half ks[TILE_K][HEAD_DIM];
  __shared__ __half vs[TILE_K][HEAD_DIM];
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int row = blockIdx.x * TILE_Q + threadIdx.x;
  const size_t base = ((size_t)b * H + h) * (size_t)S * HEAD_DIM;

  float qr[HEAD_DIM];
  acc_t acc[HEAD_DIM];
  for (int d = 0; d < HEAD_DIM; ++d) {
    qr[d] = row < S ? __half2float(q[base + (size_t)row * HEAD_DIM + d]) * scale : 0.f;
    acc[d] = to_acc(0.f);
  }
  float m = -INFINITY, l = 0.f;

  for (int t0 = 0; t0 < S; t0 += TILE_K) {
    for (int i = threadIdx.x; i < TILE_K * HEAD_DIM; i += blockDim.x) {
      const int r = i / HEAD_DIM, c = i % HEAD_DIM;
      const bool in = t0 + r < S;
      ks[r][c] = in ? k[base + (size_t)(t0 + r) * HEAD_DIM + c] : __float2half(0.f);
      vs[r][c] = in ? v[base + (size_t)(t0 + r) * HEAD_DIM + c] : __float2half(0.f);
    }
    __syncthreads();
    for (int j = 0; j < TILE_K && t0 + j < S; ++j) {
      float s = 0.f;
      for (int d = 0; d < HEAD_DIM; ++d) s += qr[d] * __half2float(ks[j][d]);
      const float m_new = fmaxf(m, s);
      const float corr = __expf(m - m_new), p = __expf(s - m_new);
      l = l * corr + p;
      for (int d = 0; d < HEAD_DIM; ++d) {
        acc[d] = to_acc(from_acc(acc[d]) * corr + p * __half2float(vs[j][d]));
      }
      m = m_new;
    }
    __syncthreads();
  }
  if (row < S) {
    for (int d = 0; d < HEAD_DIM; ++d) {
      o[base + (size_t)row * HEAD_DIM + d] = __float2half(from_acc(acc[d]) / l);
    }
  }
}
