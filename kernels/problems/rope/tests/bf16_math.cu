// A SHORTCUT rotary embedding (right on benign queries and keys, wrong at the edge): the
// rotation in bf16 (cos and sin rounded to bf16, each product and difference a bf16 operation),
// the data path of packed bf16x2 arithmetic. Each step loses 2^-9 of its operands; with values
// of std 1 that stays within the 0.02 + 1 % tolerance, but the case `stress` holds massive
// values (50 to 500) in one rotation pair, whose rotated halves x1 c - x2 s nearly cancel at
// some angles: the rounding of the large products is then far larger than the small result.
// The harness must reject it on that case, naming output q's (or k's) tolerance check.
// kernels/tests/problems_shortcuts_gtest.cpp runs the same arithmetic on the CPU. CUDA (sm_80+).
#include <cuda_bf16.h>
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { Q = 0, K = 1, POSITIONS = 2, COS_SIN = 3, NUM_TENSORS = 4 };
enum { DIM_T = 0, DIM_HQ = 1, DIM_HK = 2, DIM_D = 3, DIM_P = 4 };

__device__ __nv_bfloat16 bf(uint16_t bits) {
  __nv_bfloat16_raw r;
  r.x = bits;
  return __nv_bfloat16(r);
}
__device__ uint16_t bits_of(__nv_bfloat16 v) { return __nv_bfloat16_raw(v).x; }

__global__ void rope_pairs(kfleet_problem_args a) {
  const size_t T = (size_t)a.dims[DIM_T], HQ = (size_t)a.dims[DIM_HQ], HK = (size_t)a.dims[DIM_HK];
  const size_t D = (size_t)a.dims[DIM_D], half = D / 2;
  const size_t pairs = T * (HQ + HK) * half;
  const int32_t* pos = static_cast<const int32_t*>(a.tensors[POSITIONS].data);
  const float* cs = static_cast<const float*>(a.tensors[COS_SIN].data);
  for (size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x; p < pairs; p += (size_t)gridDim.x * blockDim.x) {
    const size_t i = p % half, th = p / half, t = th / (HQ + HK), h = th % (HQ + HK);
    uint16_t* x = h < HQ ? static_cast<uint16_t*>(a.tensors[Q].data) + (t * HQ + h) * D
                         : static_cast<uint16_t*>(a.tensors[K].data) + (t * HK + (h - HQ)) * D;
    const float* row = cs + (size_t)pos[t] * D;
    const __nv_bfloat16 c = __float2bfloat16(row[i]), s = __float2bfloat16(row[half + i]);
    const __nv_bfloat16 x1 = bf(x[i]), x2 = bf(x[half + i]);
    x[i] = bits_of(__hsub_rn(__hmul_rn(x1, c), __hmul_rn(x2, s)));  // each rounded: no fma
    x[half + i] = bits_of(__hadd_rn(__hmul_rn(x2, c), __hmul_rn(x1, s)));
  }
}

}  // namespace

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_PROBLEM_ABI_VERSION || args->num_tensors != NUM_TENSORS ||
      strncmp(args->problem, "rope", KFLEET_PROBLEM_NAME_BYTES) != 0 ||
      args->tensors[Q].dtype != KFLEET_BF16 || args->tensors[K].dtype != KFLEET_BF16 ||
      args->tensors[POSITIONS].dtype != KFLEET_INT32 || args->tensors[COS_SIN].dtype != KFLEET_FP32 ||
      args->dims[DIM_D] % 2 != 0)
    return KFLEET_UNSUPPORTED;
  const size_t pairs = (size_t)args->dims[DIM_T] * (size_t)(args->dims[DIM_HQ] + args->dims[DIM_HK]) *
                       (size_t)(args->dims[DIM_D] / 2);
  const size_t blocks = (pairs + 255) / 256;
  rope_pairs<<<(unsigned)(blocks < 65535 ? blocks : 65535), 256, 0, stream>>>(*args);
  return KFLEET_OK;
}
