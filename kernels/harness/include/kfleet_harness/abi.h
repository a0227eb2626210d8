/* The kernel ABI between the kfleet harness and a job's kernel source (ABI.md).
 * Plain C so that CUDA, HIP and host C++ compilers all read it identically; bump
 * KFLEET_ABI_VERSION on any layout change: the harness refuses a kernel built against another. */
#ifndef KFLEET_HARNESS_ABI_H
#define KFLEET_HARNESS_ABI_H

#include <stddef.h>
#include <stdint.h>

#define KFLEET_ABI_VERSION 1

/* Status a launch function returns. KFLEET_UNSUPPORTED means "this kernel does not handle this
 * shape/dtype/flag combination": the harness reports it as a rejection naming the case, not as
 * a crash. Launch errors from the runtime itself are detected by the harness, not returned. */
#define KFLEET_OK 0
#define KFLEET_UNSUPPORTED 1

typedef enum kfleet_dtype {
  KFLEET_FP16 = 0,     /* IEEE binary16 */
  KFLEET_BF16 = 1,     /* bfloat16 */
  KFLEET_FP8_E4M3 = 2, /* OCP fp8 e4m3fn: bias 7, no infinities, S.1111.111 is NaN, max 448 */
  KFLEET_FP32 = 3,
  KFLEET_INT32 = 4,    /* problems of the library only (problem_abi.h): indices, offsets */
  KFLEET_INT64 = 5
} kfleet_dtype;

/* B layout for scaled_mm. NK ([N, K] row-major, i.e. B column-major: each output column's K
 * values contiguous) is the default because fp8 tensor-core GEMMs (cuBLASLt, torch._scaled_mm,
 * hipBLASLt) want both operands K-major. */
typedef enum kfleet_b_layout { KFLEET_B_NK = 0, KFLEET_B_KN = 1 } kfleet_b_layout;

/* attention: O = softmax(scale * Q K^T [+ causal mask]) V per (batch, head).
 * All tensors are dense row-major [B, H, S, D] (D fastest). The real value of an fp8 element is
 * decode(x) * its tensor's scale; fp16 tensors use scale 1. Causal masks key j > query i. */
typedef struct kfleet_attention_args {
  int abi_version;            /* == KFLEET_ABI_VERSION */
  int batch, heads, seq_len, head_dim;
  int causal;                 /* 0 or 1 */
  kfleet_dtype q_dtype;       /* KFLEET_FP16 */
  kfleet_dtype kv_dtype;      /* KFLEET_FP16 or KFLEET_FP8_E4M3 (K and V share it) */
  kfleet_dtype out_dtype;     /* KFLEET_FP16 */
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float q_scale, k_scale, v_scale; /* per-tensor dequantisation scales */
  float softmax_scale;        /* 1/sqrt(head_dim) unless the job says otherwise */
  void* workspace;            /* device scratch the kernel may use freely, zero-filled once */
  size_t workspace_bytes;
} kfleet_attention_args;

/* scaled_mm: D[m, n] = a_scale * b_scale * sum_k A[m, k] * B[k, n] + bias[n], rounded once to
 * out_dtype. A is fp8 e4m3 [M, K] row-major; B is fp8 e4m3 laid out as b_layout says; bias is
 * NULL or [N] in out_dtype; D is [M, N] row-major in out_dtype (KFLEET_FP16 or KFLEET_BF16). */
typedef struct kfleet_scaled_mm_args {
  int abi_version;
  int m, n, k;
  kfleet_b_layout b_layout;
  kfleet_dtype a_dtype, b_dtype; /* KFLEET_FP8_E4M3 */
  kfleet_dtype out_dtype;
  const void* a;
  const void* b;
  const void* bias;
  void* d;
  float a_scale, b_scale;
  void* workspace;
  size_t workspace_bytes;
} kfleet_scaled_mm_args;

#endif /* KFLEET_HARNESS_ABI_H */
