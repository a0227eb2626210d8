// A SHORTCUT attention (right on benign scores, wrong at the edge): softmax without the running
// maximum. p = exp(s) is summed and applied directly, so no rescaling of the accumulator per key
// and one exp fewer. Softmax is shift-invariant, and on the family's uniform [-1, 1) inputs
// every score is within +-8, so it gives the same output; but exp() overflows to inf past 88,
// and attention@2's case `stress` (scores to ~600) makes inf / inf: NaN. The harness must reject
// it on that case, naming output o's check. kernels/tests/problems_shortcuts_gtest.cpp runs the
// same arithmetic on the CPU. fp16 q, k, v and out only.
#include "kfleet_harness/kernel.hpp"

namespace {

constexpr int kMaxHeadDim = 256;

__device__ float h(const void* p, size_t i) { return kfleet_half_bits_to_float(static_cast<const uint16_t*>(p)[i]); }

__global__ void attention_rows(kfleet_attention_args a) {
  const size_t rows = (size_t)a.batch * a.heads * a.seq_len;
  const size_t row = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const size_t S = a.seq_len, D = a.head_dim, base = (row / S) * S * D, i = row % S;
  const size_t keys = a.causal ? i + 1 : S;
  float acc[kMaxHeadDim];
  for (size_t d = 0; d < D; ++d) acc[d] = 0.0f;
  float denom = 0.0f;
  for (size_t j = 0; j < keys; ++j) {
    float dot = 0.0f;
    for (size_t d = 0; d < D; ++d) dot += h(a.q, row * D + d) * h(a.k, base + j * D + d);
    const float p = expf(dot * a.softmax_scale);  // no maximum subtracted
    denom += p;
    for (size_t d = 0; d < D; ++d) acc[d] += p * h(a.v, base + j * D + d);
  }
  uint16_t* o = static_cast<uint16_t*>(a.o);
  for (size_t d = 0; d < D; ++d) o[row * D + d] = kfleet_float_to_half_bits(acc[d] / denom);
}

}  // namespace

extern "C" int kfleet_attention_launch(const kfleet_attention_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_ABI_VERSION || args->head_dim > kMaxHeadDim ||
      args->q_dtype != KFLEET_FP16 || args->kv_dtype != KFLEET_FP16 || args->out_dtype != KFLEET_FP16)
    return KFLEET_UNSUPPORTED;
  const size_t rows = (size_t)args->batch * args->heads * args->seq_len;
  attention_rows<<<(unsigned)((rows + 127) / 128), 128, 0, stream>>>(*args);
  return KFLEET_OK;
}
