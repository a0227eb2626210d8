"""A scaled_mm kernel in CUDA C++ compiled by torch.utils.cpp_extension.load_inline, for kfleet's
scaled_mm family with `language: torch` (kernels/harness/PYTHON.md). One thread
per output element, fp32 accumulation, like kernels/reference/scaled_mm_ref.cu: a plain example
of a torch extension's kernel being recorded (its fatbin) and replayed, not a fast GEMM.

The extension is built when this module is imported: in the recorder, inside the job's sandbox,
with TORCH_EXTENSIONS_DIR in the run's folder (it needs nvcc and ninja where the agent runs).

    kernel: {family: scaled_mm, language: torch, sources: ["lib:torch/scaled_mm_ext.py"]}
"""
import torch
from torch.utils.cpp_extension import load_inline

import kfleet

CUDA_SRC = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>

// Decoded through the intrinsic, not __nv_fp8_e4m3's conversion operators: torch builds
// extensions with -D__CUDA_NO_HALF_CONVERSIONS__ and friends.
__device__ float fp8_e4m3(unsigned char v) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(v, __NV_E4M3)));
}

extern "C" __global__ void kfleet_scaled_mm_fp8(const unsigned char* a, const unsigned char* b,
                                                const unsigned short* bias, unsigned short* d,
                                                int m, int n, int k, int b_nk, float scale,
                                                int out_bf16) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n || row >= m) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) {
    const unsigned char x = a[(long long)row * k + i];
    const unsigned char y = b_nk ? b[(long long)col * k + i] : b[(long long)i * n + col];
    acc += fp8_e4m3(x) * fp8_e4m3(y);
  }
  float r = scale * acc;
  if (bias) {
    r += out_bf16 ? __bfloat162float(__ushort_as_bfloat16(bias[col]))
                  : __half2float(__ushort_as_half(bias[col]));
  }
  d[(long long)row * n + col] = out_bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(r))
                                         : __half_as_ushort(__float2half_rn(r));
}

void launch(int64_t a, int64_t b, int64_t bias, int64_t d, int64_t m, int64_t n, int64_t k,
            bool b_nk, double scale, bool out_bf16) {
  const dim3 block(128), grid((unsigned)((n + 127) / 128), (unsigned)m);
  // torch's current stream: the recorder made it the launch's `stream`.
  kfleet_scaled_mm_fp8<<<grid, block, 0, c10::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const unsigned char*>(a), reinterpret_cast<const unsigned char*>(b),
      reinterpret_cast<const unsigned short*>(bias), reinterpret_cast<unsigned short*>(d),
      (int)m, (int)n, (int)k, b_nk ? 1 : 0, (float)scale, out_bf16 ? 1 : 0);
}
"""

_ext = load_inline(name="kfleet_scaled_mm_ext", cpp_sources="void launch(int64_t a, int64_t b, "
                   "int64_t bias, int64_t d, int64_t m, int64_t n, int64_t k, bool b_nk, "
                   "double scale, bool out_bf16);", cuda_sources=CUDA_SRC, functions=["launch"],
                   extra_cuda_cflags=["-O3"], verbose=False)


def kfleet_scaled_mm_launch(args, stream):
    if args.a_dtype != "fp8_e4m3" or args.b_dtype != "fp8_e4m3" or args.out_dtype not in ("fp16", "bf16"):
        return kfleet.UNSUPPORTED
    bias = args.bias.data_ptr() if args.bias is not None else 0
    _ext.launch(args.a.data_ptr(), args.b.data_ptr(), bias, args.d.data_ptr(), args.m, args.n,
                args.k, args.b_layout == "nk", args.a_scale * args.b_scale, args.out_dtype == "bf16")
    return kfleet.OK
