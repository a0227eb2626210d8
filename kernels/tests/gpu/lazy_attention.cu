// Adversarial kernels for the harness's integrity checks (run by hand or by an opt-in GPU job;
// each must be REJECTED). KFLEET_LAZY_MODE 0: writes nothing. 1: writes half the output.
// 2: writes the right answer's shape of zeros and scribbles on Q.
#include "kfleet_harness/kernel.hpp"

#ifndef KFLEET_LAZY_MODE
#define KFLEET_LAZY_MODE 0
#endif

__global__ void lazy_fill(uint16_t* o, size_t n, uint16_t* q) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (KFLEET_LAZY_MODE == 1 && i % 2 == 0) o[i] = 0;
  if (KFLEET_LAZY_MODE == 2) { o[i] = 0; q[i] = 0; }
}

extern "C" int kfleet_attention_launch(const kfleet_attention_args* a, gpuStream_t stream) {
  const size_t n = (size_t)a->batch * a->heads * a->seq_len * a->head_dim;
  lazy_fill<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(
      static_cast<uint16_t*>(a->o), n, const_cast<uint16_t*>(static_cast<const uint16_t*>(a->q)));
  return KFLEET_OK;
}
