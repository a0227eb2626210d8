/* The generic launch ABI of a problem of the library (kernels/problems/<name>/problem.yaml;
 * ABI.md, "Problems: the generic ABI"). One struct holds everything a kernel gets: its tensors,
 * the case's dimensions and scalars, and device scratch. Plain C with fixed-width fields and no
 * host pointers, so CUDA, HIP, host C/C++ and a Python recorder (ctypes) read the same bytes,
 * and so the struct's bytes plus the tensors' fixed-arena device addresses are all a recorder
 * has to write into a launch list for the measuring process to replay the launch.
 * Bump KFLEET_PROBLEM_ABI_VERSION on any layout change. */
#ifndef KFLEET_HARNESS_PROBLEM_ABI_H
#define KFLEET_HARNESS_PROBLEM_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "kfleet_harness/abi.h" /* kfleet_dtype, KFLEET_OK, KFLEET_UNSUPPORTED */

#define KFLEET_PROBLEM_ABI_VERSION 1
#define KFLEET_PROBLEM_MAX_TENSORS 12 /* inputs then outputs, as problem.yaml lists them */
#define KFLEET_PROBLEM_MAX_RANK 6
#define KFLEET_PROBLEM_MAX_DIMS 16    /* named dimensions, as problem.yaml's `dims` lists them */
#define KFLEET_PROBLEM_MAX_SCALARS 8  /* scalar parameters, as problem.yaml's `scalars` lists them */
#define KFLEET_PROBLEM_NAME_BYTES 32

/* Tensor roles. An output written in place of an input has one slot, the input's, with role
 * KFLEET_TENSOR_INOUT: its data pointer is writable and its contents on entry are the input. */
#define KFLEET_TENSOR_INPUT 0
#define KFLEET_TENSOR_OUTPUT 1
#define KFLEET_TENSOR_INOUT 2

/* One tensor: a device address and its shape. data is the device address of element 0 (in
 * replay mode an address in the fixed arena, identical in the recorder and the measuring
 * process). Element (i0, .., i{rank-1}) is at data + sum(i_d * stride[d]) elements. Entries of
 * shape/stride past rank are 0. 128 bytes, 8-byte aligned. */
typedef struct kfleet_tensor {
  void* data;                               /* offset 0 */
  int32_t dtype;                            /* 8: a kfleet_dtype value */
  int32_t rank;                             /* 12: 0..KFLEET_PROBLEM_MAX_RANK */
  int32_t role;                             /* 16: KFLEET_TENSOR_INPUT / _OUTPUT / _INOUT */
  int32_t reserved;                         /* 20: 0 */
  int64_t shape[KFLEET_PROBLEM_MAX_RANK];   /* 24 */
  int64_t stride[KFLEET_PROBLEM_MAX_RANK];  /* 72: in elements, row-major unless the layout says */
  int64_t bytes;                            /* 120: size of the allocation behind data */
} kfleet_tensor;

/* One scalar parameter. Both fields are filled: f64 the value, i64 the value truncated toward
 * zero (for an integer scalar they are equal). Read the one problem.yaml's dtype names. */
typedef struct kfleet_scalar {
  double f64;
  int64_t i64;
} kfleet_scalar;

/* What kfleet_problem_launch gets. Everything is a value or a device address: nothing here
 * points into host memory, so a launch may pass the whole struct to a kernel by value (it is
 * under the 4 KiB kernel-parameter limit of CUDA and HIP) and a recorded copy of its bytes
 * stays valid in the measuring process. */
typedef struct kfleet_problem_args {
  uint32_t abi_version;                      /* 0: KFLEET_PROBLEM_ABI_VERSION */
  uint32_t struct_bytes;                     /* 4: sizeof(kfleet_problem_args) */
  char problem[KFLEET_PROBLEM_NAME_BYTES];   /* 8: problem.yaml's `problem`, NUL-terminated */
  uint32_t problem_version;                  /* 40: problem.yaml's `version` */
  int32_t num_tensors;                       /* 44 */
  int32_t num_dims;                          /* 48 */
  int32_t num_scalars;                       /* 52 */
  int64_t dims[KFLEET_PROBLEM_MAX_DIMS];     /* 56: this case's value of each named dimension */
  kfleet_scalar scalars[KFLEET_PROBLEM_MAX_SCALARS];  /* 184 */
  kfleet_tensor tensors[KFLEET_PROBLEM_MAX_TENSORS];  /* 312 */
  void* workspace;                           /* 1848: device scratch, zero-filled once per process */
  uint64_t workspace_bytes;                  /* 1856: at least what problem.yaml's `workspace` says */
  uint64_t reserved[4];                      /* 1864: 0 */
} kfleet_problem_args;                       /* 1896 bytes */

/* Layout checks every compiler that includes this header makes (nvcc, clang/hipcc, gcc, a C
 * compiler): a mismatch fails the build, not a launch. 64-bit targets only. */
#if defined(__cplusplus)
#define KFLEET_PROBLEM_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define KFLEET_PROBLEM_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
KFLEET_PROBLEM_STATIC_ASSERT(sizeof(void*) == 8, "the problem ABI is for 64-bit targets");
KFLEET_PROBLEM_STATIC_ASSERT(sizeof(kfleet_tensor) == 128, "kfleet_tensor is 128 bytes");
KFLEET_PROBLEM_STATIC_ASSERT(offsetof(kfleet_tensor, shape) == 24, "kfleet_tensor.shape at 24");
KFLEET_PROBLEM_STATIC_ASSERT(offsetof(kfleet_tensor, stride) == 72, "kfleet_tensor.stride at 72");
KFLEET_PROBLEM_STATIC_ASSERT(sizeof(kfleet_scalar) == 16, "kfleet_scalar is 16 bytes");
KFLEET_PROBLEM_STATIC_ASSERT(offsetof(kfleet_problem_args, dims) == 56, "dims at 56");
KFLEET_PROBLEM_STATIC_ASSERT(offsetof(kfleet_problem_args, scalars) == 184, "scalars at 184");
KFLEET_PROBLEM_STATIC_ASSERT(offsetof(kfleet_problem_args, tensors) == 312, "tensors at 312");
KFLEET_PROBLEM_STATIC_ASSERT(offsetof(kfleet_problem_args, workspace) == 1848, "workspace at 1848");
KFLEET_PROBLEM_STATIC_ASSERT(sizeof(kfleet_problem_args) == 1896, "kfleet_problem_args is 1896 bytes");
#undef KFLEET_PROBLEM_STATIC_ASSERT

#endif /* KFLEET_HARNESS_PROBLEM_ABI_H */
