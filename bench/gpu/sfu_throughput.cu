// Per-SM throughput of the three instruction streams the fp8_sdpa softmax and producer lean on:
// ex2.approx (the SFU), FFMA, and cvt.rn.f16x2.e4m3x2. One block of N threads per SM, 8
// independent chains a thread, clock64 around the loop; prints operations per clock per SM.
//   nvcc -O3 -arch=sm_90 -o /tmp/sfu_throughput bench/gpu/sfu_throughput.cu && /tmp/sfu_throughput
// (H100, 2026-11-25: ex2 16 a clock per SM from 256 threads, FFMA ~107, the fp8 conversion with
// its FFMA ~52; docs/gpu-runs/2026-11-25-fp8-softmax-diagnostics.log.)
#include <cstdio>
#include <cuda_runtime.h>

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <int MODE>
__global__ void chains(float* out, long long* cycles, int iters) {
  float a[8];
  for (int i = 0; i < 8; ++i) a[i] = -(threadIdx.x + i) * 1e-3f;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (MODE == 0) {
        a[i] = ex2(a[i]) - 1.0f;
      } else if (MODE == 1) {
        a[i] = fmaf(a[i], 0.999f, -1e-3f);
      } else {
        unsigned h;
        asm volatile("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"((unsigned short)__float_as_uint(a[i])));
        a[i] = __uint_as_float(h) * 1e-30f - 1e-3f;
      }
    }
  }
  const long long t1 = clock64();
  float s = 0;
  for (int i = 0; i < 8; ++i) s += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the chains alive
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

int main() {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  float* out = nullptr;
  long long* cycles = nullptr;
  if (cudaMalloc(&out, (size_t)sms * 1024 * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&cycles, (size_t)sms * sizeof(long long)) != cudaSuccess) {
    std::fprintf(stderr, "sfu_throughput: no CUDA device memory\n");
    return 1;
  }
  const int iters = 4096;
  const char* names[3] = {"ex2.approx + fadd", "ffma", "cvt e4m3x2->f16x2 + ffma"};
  for (int mode = 0; mode < 3; ++mode)
    for (int threads : {128, 256, 512, 1024}) {
      for (int rep = 0; rep < 2; ++rep) {  // the first launch warms up
        if (mode == 0) chains<0><<<sms, threads>>>(out, cycles, iters);
        else if (mode == 1) chains<1><<<sms, threads>>>(out, cycles, iters);
        else chains<2><<<sms, threads>>>(out, cycles, iters);
        if (cudaDeviceSynchronize() != cudaSuccess) {
          std::fprintf(stderr, "sfu_throughput: launch failed\n");
          return 1;
        }
      }
      long long c = 0;
      cudaMemcpy(&c, cycles, sizeof c, cudaMemcpyDeviceToHost);
      const double ops = (double)threads * iters * 8;
      std::printf("%-26s threads %4d: %6.2f ops/clk/SM (%lld cycles)\n", names[mode], threads,
                  ops / (double)c, c);
    }
  return 0;
}
