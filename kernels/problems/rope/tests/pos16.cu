// A SHORTCUT rotary embedding (right for contexts up to 64k, wrong at the edge): each token's
// position is kept in 16 bits (uint16_t), packed two to a register with the token's head
// offset, as kernels written for 4k-to-32k models do. Every position of the benign cases is
// below 128; the case `stress` reaches 131071, and positions past 65535 wrap to the wrong row
// of the cos/sin cache (still inside it). The harness must reject it on that case, naming
// output q's (or k's) tolerance check. kernels/tests/problems_shortcuts_gtest.cpp runs the same
// arithmetic on the CPU.
#include <string.h>

#include "kfleet_harness/kernel.hpp"

namespace {

enum { Q = 0, K = 1, POSITIONS = 2, COS_SIN = 3, NUM_TENSORS = 4 };
enum { DIM_T = 0, DIM_HQ = 1, DIM_HK = 2, DIM_D = 3, DIM_P = 4 };

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
    const uint16_t position = (uint16_t)pos[t];  // 16 bits: contexts up to 65536
    const float* row = cs + (size_t)position * D;
    const float c = row[i], s = row[half + i];
    const float x1 = kfleet_bf16_bits_to_float(x[i]), x2 = kfleet_bf16_bits_to_float(x[half + i]);
    x[i] = kfleet_float_to_bf16_bits(x1 * c - x2 * s);
    x[half + i] = kfleet_float_to_bf16_bits(x2 * c + x1 * s);
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
