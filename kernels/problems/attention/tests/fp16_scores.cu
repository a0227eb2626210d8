// A SHORTCUT attention (right on benign scores, wrong at the edge): each score Q.K accumulated
// in fp16 (__hfma, as an fp16-accumulating MMA does at twice the rate on many GPUs), then an
// exact softmax (maximum subtracted) and P.V in fp32. On the family's uniform [-1, 1) inputs a
// dot product stays below 64 and fp16's steps (2^-9 near 2) barely move the weights; in
// attention@2's case `stress` two massive channels put the dot products near 2500, where fp16
// steps by 2, and wherever two keys come close the wrong one wins. The harness must reject it
// on that case, naming output o's check. kernels/tests/problems_shortcuts_gtest.cpp runs the
// same arithmetic on the CPU. fp16 q, k, v and out only.
#include <cuda_fp16.h>

#include "kfleet_harness/kernel.hpp"

namespace {

constexpr int kMaxKeys = 4096, kMaxHeadDim = 256;

__device__ __half hv(const void* p, size_t i) {
  return __ushort_as_half(static_cast<const unsigned short*>(p)[i]);
}

__global__ void attention_rows(kfleet_attention_args a) {
  const size_t rows = (size_t)a.batch * a.heads * a.seq_len;
  const size_t row = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const size_t S = a.seq_len, D = a.head_dim, base = (row / S) * S * D, i = row % S;
  const size_t keys = a.causal ? i + 1 : S;
  float m = -INFINITY;
  for (size_t j = 0; j < keys; ++j) {
    __half dot = __float2half(0.0f);
    for (size_t d = 0; d < D; ++d) dot = __hfma(hv(a.q, row * D + d), hv(a.k, base + j * D + d), dot);
    m = fmaxf(m, __half2float(dot) * a.softmax_scale);
  }
  float acc[kMaxHeadDim];
  for (size_t d = 0; d < D; ++d) acc[d] = 0.0f;
  float denom = 0.0f;
  for (size_t j = 0; j < keys; ++j) {
    __half dot = __float2half(0.0f);
    for (size_t d = 0; d < D; ++d) dot = __hfma(hv(a.q, row * D + d), hv(a.k, base + j * D + d), dot);
    const float p = expf(__half2float(dot) * a.softmax_scale - m);
    denom += p;
    for (size_t d = 0; d < D; ++d) acc[d] += p * __half2float(hv(a.v, base + j * D + d));
  }
  uint16_t* o = static_cast<uint16_t*>(a.o);
  for (size_t d = 0; d < D; ++d) o[row * D + d] = kfleet_float_to_half_bits(acc[d] / denom);
}

}  // namespace

extern "C" int kfleet_attention_launch(const kfleet_attention_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_ABI_VERSION || args->head_dim > kMaxHeadDim || args->seq_len > kMaxKeys ||
      args->q_dtype != KFLEET_FP16 || args->kv_dtype != KFLEET_FP16 || args->out_dtype != KFLEET_FP16)
    return KFLEET_UNSUPPORTED;
  const size_t rows = (size_t)args->batch * args->heads * args->seq_len;
  attention_rows<<<(unsigned)((rows + 127) / 128), 128, 0, stream>>>(*args);
  return KFLEET_OK;
}
