// A plain, correct attention kernel for the kfleet ABI (ABI.md): one thread per query row,
// online softmax over the keys, fp32 accumulation. Slow on purpose-free grounds: it exists so
// the system can be exercised end to end before an optimised kernel exists. CUDA and HIP.
#include "kfleet_harness/kernel.hpp"

namespace {

constexpr int kMaxHeadDim = 256;

__device__ float load_element(const void* p, size_t i, kfleet_dtype t, float scale) {
  if (t == KFLEET_FP8_E4M3) return kfleet_fp8_e4m3_to_float(static_cast<const uint8_t*>(p)[i]) * scale;
  return kfleet_half_bits_to_float(static_cast<const uint16_t*>(p)[i]) * scale;
}

__global__ void attention_rows(kfleet_attention_args a) {
  const size_t rows = (size_t)a.batch * a.heads * a.seq_len;
  const size_t row = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const size_t S = a.seq_len, D = a.head_dim;
  const size_t head_base = (row / S) * S * D;
  const size_t i = row % S;
  float acc[kMaxHeadDim];
  for (size_t d = 0; d < D; ++d) acc[d] = 0.0f;
  float running_max = -INFINITY, denom = 0.0f;
  const size_t keys = a.causal ? i + 1 : S;
  for (size_t j = 0; j < keys; ++j) {
    float dot = 0.0f;
    for (size_t d = 0; d < D; ++d)
      dot += load_element(a.q, row * D + d, a.q_dtype, a.q_scale) *
             load_element(a.k, head_base + j * D + d, a.kv_dtype, a.k_scale);
    const float s = dot * a.softmax_scale;
    const float new_max = fmaxf(running_max, s);
    const float correction = expf(running_max - new_max);  // 0 on the first key
    const float p = expf(s - new_max);
    denom = denom * correction + p;
    for (size_t d = 0; d < D; ++d)
      acc[d] = acc[d] * correction + p * load_element(a.v, head_base + j * D + d, a.kv_dtype, a.v_scale);
    running_max = new_max;
  }
  uint16_t* o = static_cast<uint16_t*>(a.o);
  for (size_t d = 0; d < D; ++d) o[row * D + d] = kfleet_float_to_half_bits(acc[d] / denom);
}

}  // namespace

extern "C" int kfleet_attention_launch(const kfleet_attention_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_ABI_VERSION || args->head_dim > kMaxHeadDim ||
      args->q_dtype != KFLEET_FP16 || args->out_dtype != KFLEET_FP16 ||
      (args->kv_dtype != KFLEET_FP16 && args->kv_dtype != KFLEET_FP8_E4M3))
    return KFLEET_UNSUPPORTED;
  const size_t rows = (size_t)args->batch * args->heads * args->seq_len;
  const unsigned threads = 128;
  const unsigned blocks = (unsigned)((rows + threads - 1) / threads);
  attention_rows<<<blocks, threads, 0, stream>>>(*args);
  return KFLEET_OK;
}
