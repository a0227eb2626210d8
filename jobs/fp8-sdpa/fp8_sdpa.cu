// Scaled dot-product attention with fp16 queries and fp8 (e4m3) keys/values, one thread per
// query row, K/V tiles staged in shared memory.
// USE_SMEM_SWIZZLE_XOR: XOR-swizzle the shared-memory column index to spread a warp's reads over
// banks (the stage3 step2 experiment; on L4 it measured slower, a valid negative result).
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#ifndef TILE_K
#define TILE_K 64
#endif
#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif

__device__ inline int smem_col(int row, int col) {
#if USE_SMEM_SWIZZLE_XOR
  return col ^ ((row & 7) << 3);
#else
  (void)row;
  return col;
#endif
}

// q, o: [B, H, S, D] fp16; k, v: [B, H, S, D] fp8 e4m3. grid = (ceil(S / blockDim.x), H, B).
extern "C" __global__ void fp8_sdpa(const __half* __restrict__ q,
                                    const __nv_fp8_e4m3* __restrict__ k,
                                    const __nv_fp8_e4m3* __restrict__ v, __half* __restrict__ o,
                                    int S, float scale) {
  __shared__ __nv_fp8_e4m3 ks[TILE_K][HEAD_DIM];
  __shared__ __nv_fp8_e4m3 vs[TILE_K][HEAD_DIM];
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t base = ((size_t)b * H + h) * (size_t)S * HEAD_DIM;

  float qr[HEAD_DIM], acc[HEAD_DIM];
  for (int d = 0; d < HEAD_DIM; ++d) {
    qr[d] = row < S ? __half2float(q[base + (size_t)row * HEAD_DIM + d]) * scale : 0.f;
    acc[d] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int t0 = 0; t0 < S; t0 += TILE_K) {
    for (int i = threadIdx.x; i < TILE_K * HEAD_DIM; i += blockDim.x) {
      const int r = i / HEAD_DIM, c = i % HEAD_DIM;
      const bool in = t0 + r < S;
      const size_t g = base + (size_t)(t0 + r) * HEAD_DIM + c;
      ks[r][smem_col(r, c)] = in ? k[g] : __nv_fp8_e4m3(0.f);
      vs[r][smem_col(r, c)] = in ? v[g] : __nv_fp8_e4m3(0.f);
    }
    __syncthreads();
    for (int j = 0; j < TILE_K && t0 + j < S; ++j) {
      float s = 0.f;
      for (int d = 0; d < HEAD_DIM; ++d) s += qr[d] * float(ks[j][smem_col(j, d)]);
      const float m_new = fmaxf(m, s);
      const float corr = __expf(m - m_new), p = __expf(s - m_new);
      l = l * corr + p;
      for (int d = 0; d < HEAD_DIM; ++d) acc[d] = acc[d] * corr + p * float(vs[j][smem_col(j, d)]);
      m = m_new;
    }
    __syncthreads();
  }
  if (row < S) {
    for (int d = 0; d < HEAD_DIM; ++d) o[base + (size_t)row * HEAD_DIM + d] = __float2half(acc[d] / l);
  }
}
