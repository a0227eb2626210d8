// Per-SM throughput of the instruction streams the fp8_sdpa softmax and producer lean on, alone
// and in pairs (a pair's rate near the slower one's alone: separate pipes; near half: one pipe).
// One block of N threads per SM, 8 independent chains a thread, clock64 around the loop; prints
// steps per clock per SM (a step is one of each instruction its mode names).
//   nvcc -O3 -arch=sm_90 -o /tmp/sfu_throughput bench/gpu/sfu_throughput.cu && /tmp/sfu_throughput
// H100, 2026-11-25: ex2.f32 16 a clock per SM from 256 threads; ex2.f16x2 and .bf16x2 8 (two
// values each: the same 16 exponentials); FFMA ~107; the e4m3 -> f16x2 and f32 -> f16x2
// conversions ~55-59 with their FFMA, and neither slows ex2 when paired with it (not the SFU).
// kernels/suite/NOTES.md (the logs: git show 7f263d8:docs/gpu-runs/2026-11-25-fp8-*.log).
#include <cstdio>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ unsigned ex2h2(unsigned x) {
  unsigned y;
  asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}
__device__ __forceinline__ unsigned ex2bf2(unsigned x) {
  unsigned y;
  asm volatile("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}
__device__ __forceinline__ unsigned pack_f16x2(float lo, float hi) {
  unsigned y;
  asm volatile("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(y) : "f"(lo), "f"(hi));
  return y;
}
__device__ __forceinline__ unsigned cvt_e4m3x2(unsigned x) {
  unsigned h;
  asm volatile("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"((unsigned short)x));
  return h;
}
__device__ __forceinline__ unsigned hsub1(unsigned x) {  // x - 1 on both halves (HADD2)
  __half2 h = *reinterpret_cast<__half2*>(&x);
  h = __hsub2(h, __floats2half2_rn(1.f, 1.f));
  return *reinterpret_cast<unsigned*>(&h);
}

constexpr int kModes = 9;
const char* kNames[kModes] = {"ex2.f32 (+fadd)",        "ffma",
                              "cvt e4m3x2 (+ffma)",     "ex2.f16x2 (+hadd2)",
                              "cvt f32->f16x2 (+ffma)", "ex2.f32 + cvt f32->f16x2",
                              "ex2.f16x2 + cvt f32->f16x2", "ex2.f32 + cvt e4m3x2",
                              "ex2.bf16x2 (+lop)"};

template <int MODE>
__global__ void chains(float* out, long long* cycles, int iters) {
  float a[8];
  unsigned h[8];
  for (int i = 0; i < 8; ++i) {
    a[i] = -(threadIdx.x + i) * 1e-3f;
    h[i] = 0xBC00BC00u ^ (threadIdx.x + i);  // about -1 in both halves
  }
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (MODE == 0) {
        a[i] = ex2(a[i]) - 1.0f;
      } else if (MODE == 1) {
        a[i] = fmaf(a[i], 0.999f, -1e-3f);
      } else if (MODE == 2) {
        a[i] = __uint_as_float(cvt_e4m3x2(__float_as_uint(a[i]))) * 1e-30f - 1e-3f;
      } else if (MODE == 3) {
        h[i] = hsub1(ex2h2(h[i]));
      } else if (MODE == 4) {
        a[i] = __uint_as_float(pack_f16x2(a[i], a[i])) * 1e-30f - 1e-3f;
      } else if (MODE == 5) {
        a[i] = __uint_as_float(pack_f16x2(ex2(a[i]), a[i])) * 1e-30f - 1e-3f;
      } else if (MODE == 6) {
        h[i] = ex2h2(pack_f16x2(a[i], __uint_as_float(h[i])));
        a[i] = __uint_as_float(h[i]) * 1e-30f - 1e-3f;
      } else if (MODE == 7) {
        a[i] = __uint_as_float(cvt_e4m3x2(__float_as_uint(ex2(a[i])))) * 1e-30f - 1e-3f;
      } else {
        h[i] = ex2bf2(h[i]) ^ 0x80008000u;
      }
    }
  }
  const long long t1 = clock64();
  float s = 0;
  for (int i = 0; i < 8; ++i) s += a[i] + __uint_as_float(h[i]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the chains alive
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int M>
void launch_mode(int mode, int sms, int threads, float* out, long long* cycles, int iters) {
  if constexpr (M < kModes) {
    if (mode == M) chains<M><<<sms, threads>>>(out, cycles, iters);
    else launch_mode<M + 1>(mode, sms, threads, out, cycles, iters);
  }
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
  std::printf("%-28s %8s %14s\n", "mode", "threads", "steps/clk/SM");
  for (int mode = 0; mode < kModes; ++mode)
    for (int threads : {256, 512, 1024}) {
      for (int rep = 0; rep < 2; ++rep) {  // the first launch warms up
        launch_mode<0>(mode, sms, threads, out, cycles, iters);
        if (cudaDeviceSynchronize() != cudaSuccess) {
          std::fprintf(stderr, "sfu_throughput: launch failed\n");
          return 1;
        }
      }
      long long c = 0;
      cudaMemcpy(&c, cycles, sizeof c, cudaMemcpyDeviceToHost);
      const double steps = (double)threads * iters * 8;
      std::printf("%-28s %8d %14.2f\n", kNames[mode], threads, steps / (double)c);
    }
  return 0;
}
