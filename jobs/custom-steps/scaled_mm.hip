// A kernel driven by its own scripts (family: custom): a naive fp16 GEMM, c = a * b.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

extern "C" __global__ void gemm_f16(const __half* a, const __half* b, __half* c, int M, int N,
                                    int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += __half2float(a[row * K + k]) * __half2float(b[k * N + col]);
  c[row * N + col] = __float2half(acc);
}
