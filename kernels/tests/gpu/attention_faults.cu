// The reference attention kernel (attention_ref.cu) with one deliberate fault chosen by
// KFLEET_FAULT, so the GPU proof can show each gate rejecting the right thing for the right
// reason on real hardware. Every fault is one a kernel author actually makes:
//   1 off-by-one: the key loop stops one key early (wrong values, all elements written)
//   2 unwritten tile: the 64-row output tile starting at row 64 is never stored
//   3 NaN: one output element is a computed NaN (distinct from the harness's poison pattern)
//   4 hang: spins on a workspace flag nobody sets (the harness zero-fills the workspace)
//   5 out-of-bounds write: stores far past the end of O (an illegal address on any GPU)
//   6 slow copy: repeats the per-key work for KFLEET_SLOW_PCT % of the keys and folds it into
//     the output at a weight of zero the compiler cannot see: correct, and slower in proportion
#include "kfleet_harness/kernel.hpp"

#ifndef KFLEET_FAULT
#define KFLEET_FAULT 0
#endif
#ifndef KFLEET_SLOW_PCT
#define KFLEET_SLOW_PCT 0.0
#endif

namespace {

constexpr int kMaxHeadDim = 256;

__device__ float load_element(const void* p, size_t i, kfleet_dtype t, float scale) {
  if (t == KFLEET_FP8_E4M3) return kfleet_fp8_e4m3_to_float(static_cast<const uint8_t*>(p)[i]) * scale;
  return kfleet_half_bits_to_float(static_cast<const uint16_t*>(p)[i]) * scale;
}

__global__ void attention_rows_faulty(kfleet_attention_args a) {
  const size_t rows = (size_t)a.batch * a.heads * a.seq_len;
  const size_t row = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
#if KFLEET_FAULT == 4
  volatile const int* flag = static_cast<volatile const int*>(a.workspace);
  while (*flag == 0) {
  }
#endif
  const size_t S = a.seq_len, D = a.head_dim;
  const size_t head_base = (row / S) * S * D;
  const size_t i = row % S;
  float acc[kMaxHeadDim];
  for (size_t d = 0; d < D; ++d) acc[d] = 0.0f;
  float running_max = -INFINITY, denom = 0.0f;
  size_t keys = a.causal ? i + 1 : S;
#if KFLEET_FAULT == 1
  keys -= 1;
#endif
  for (size_t j = 0; j < keys; ++j) {
    float dot = 0.0f;
    for (size_t d = 0; d < D; ++d)
      dot += load_element(a.q, row * D + d, a.q_dtype, a.q_scale) *
             load_element(a.k, head_base + j * D + d, a.kv_dtype, a.k_scale);
    const float s = dot * a.softmax_scale;
    const float new_max = fmaxf(running_max, s);
    const float correction = expf(running_max - new_max);
    const float p = expf(s - new_max);
    denom = denom * correction + p;
    for (size_t d = 0; d < D; ++d)
      acc[d] = acc[d] * correction + p * load_element(a.v, head_base + j * D + d, a.kv_dtype, a.v_scale);
    running_max = new_max;
  }
  float extra = 0.0f;
#if KFLEET_FAULT == 6
  // The main loop's per-key work (dot product, online-softmax update of a local-memory row),
  // repeated for KFLEET_SLOW_PCT % of the keys. The workspace holds zeros, so the weight is 0 at
  // run time but unknown to the compiler, which must keep the work.
  float acc2[kMaxHeadDim];
  for (size_t d = 0; d < D; ++d) acc2[d] = 0.0f;
  float max2 = -INFINITY, denom2 = 0.0f;
  const size_t extra_keys = (size_t)((double)keys * (KFLEET_SLOW_PCT) / 100.0 + 0.5);
  for (size_t j = 0; j < extra_keys; ++j) {
    float dot = 0.0f;
    for (size_t d = 0; d < D; ++d)
      dot += load_element(a.q, row * D + d, a.q_dtype, a.q_scale) *
             load_element(a.k, head_base + j * D + d, a.kv_dtype, a.k_scale);
    const float s = dot * a.softmax_scale;
    const float new_max = fmaxf(max2, s);
    const float correction = expf(max2 - new_max);
    const float p = expf(s - new_max);
    denom2 = denom2 * correction + p;
    for (size_t d = 0; d < D; ++d)
      acc2[d] = acc2[d] * correction + p * load_element(a.v, head_base + j * D + d, a.kv_dtype, a.v_scale);
    max2 = new_max;
  }
  for (size_t d = 0; d < D; ++d) extra += acc2[d] + denom2;
  extra *= static_cast<const float*>(a.workspace)[0];
#endif
  uint16_t* o = static_cast<uint16_t*>(a.o);
  for (size_t d = 0; d < D; ++d) {
    float out = acc[d] / denom + extra;
#if KFLEET_FAULT == 3
    if (row == 5 && d == 3) out = __int_as_float(0x7fc00000);  // a quiet NaN, not the poison
#endif
#if KFLEET_FAULT == 2
    if (row >= 64 && row < 128) continue;
#endif
#if KFLEET_FAULT == 5
    if (row == rows - 1 && d == 0) o[row * D + d + ((size_t)1 << 36)] = 0;  // 128 GiB past O
#endif
    o[row * D + d] = kfleet_float_to_half_bits(out);
  }
}

}  // namespace

extern "C" int kfleet_attention_launch(const kfleet_attention_args* args, gpuStream_t stream) {
  if (args->abi_version != KFLEET_ABI_VERSION || args->head_dim > kMaxHeadDim ||
      args->q_dtype != KFLEET_FP16 || args->out_dtype != KFLEET_FP16 ||
      (args->kv_dtype != KFLEET_FP16 && args->kv_dtype != KFLEET_FP8_E4M3))
    return KFLEET_UNSUPPORTED;
  if ((KFLEET_FAULT == 4 || KFLEET_FAULT == 6) && args->workspace_bytes < sizeof(float))
    return KFLEET_UNSUPPORTED;
  const size_t rows = (size_t)args->batch * args->heads * args->seq_len;
  const unsigned threads = 128;
  const unsigned blocks = (unsigned)((rows + threads - 1) / threads);
  attention_rows_faulty<<<blocks, threads, 0, stream>>>(*args);
  return KFLEET_OK;
}
