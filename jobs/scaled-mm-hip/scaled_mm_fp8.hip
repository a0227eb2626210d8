// Scaled fp8 GEMM for gfx1151: out[M,N] = (a[M,K] * b[K,N]) * scale_a * scale_b, fp16 out.
// A plain LDS-tiled kernel; TILE_M/TILE_N/TILE_K come from the job's params via defines.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <cstdint>

#ifndef TILE
#define TILE 16
#endif

// e4m3 (bias 7, no infinities, 0x7f/0xff are NaN) -> float, written out so the kernel does not
// depend on a particular ROCm fp8 header.
__device__ inline float fp8_e4m3_to_float(uint8_t x) {
  const int sign = x >> 7, exp = (x >> 3) & 0xf, man = x & 0x7;
  float mag;
  if (exp == 0) {
    mag = ldexpf((float)man, -9);  // subnormal: man/8 * 2^-6
  } else if (exp == 15 && man == 7) {
    mag = __builtin_nanf("");
  } else {
    mag = ldexpf(1.0f + man / 8.0f, exp - 7);
  }
  return sign ? -mag : mag;
}

// a: [M, K] row-major fp8, b: [K, N] row-major fp8. grid = (ceil(N/TILE), ceil(M/TILE)),
// block = (TILE, TILE).
extern "C" __global__ void scaled_mm_fp8(const uint8_t* __restrict__ a,
                                         const uint8_t* __restrict__ b, __half* __restrict__ out,
                                         int M, int N, int K, float scale_a, float scale_b) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] =
        (row < M && ka < K) ? fp8_e4m3_to_float(a[(size_t)row * K + ka]) : 0.f;
    bs[threadIdx.y][threadIdx.x] =
        (kb < K && col < N) ? fp8_e4m3_to_float(b[(size_t)kb * N + col]) : 0.f;
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk) acc += as[threadIdx.y][kk] * bs[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) out[(size_t)row * N + col] = __float2half(acc * scale_a * scale_b);
}
