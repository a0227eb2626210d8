// The generic problem ABI's layout (problem_abi.h), field by field, as PROBLEM-ABI.md documents it: a
// recorder in another language (ctypes, a Triton launcher) writes these bytes, so they are a
// contract, not an implementation detail. The header asserts the main offsets itself under
// every compiler; this test pins every field and the values of the constants.
#include <gtest/gtest.h>

#include <cstddef>

#include "kfleet_harness/problem_abi.h"

namespace {

TEST(ProblemAbi, TensorLayout) {
  EXPECT_EQ(sizeof(kfleet_tensor), 128u);
  EXPECT_EQ(alignof(kfleet_tensor), 8u);
  EXPECT_EQ(offsetof(kfleet_tensor, data), 0u);
  EXPECT_EQ(offsetof(kfleet_tensor, dtype), 8u);
  EXPECT_EQ(offsetof(kfleet_tensor, rank), 12u);
  EXPECT_EQ(offsetof(kfleet_tensor, role), 16u);
  EXPECT_EQ(offsetof(kfleet_tensor, reserved), 20u);
  EXPECT_EQ(offsetof(kfleet_tensor, shape), 24u);
  EXPECT_EQ(offsetof(kfleet_tensor, stride), 72u);
  EXPECT_EQ(offsetof(kfleet_tensor, bytes), 120u);
  EXPECT_EQ(sizeof(kfleet_scalar), 16u);
  EXPECT_EQ(offsetof(kfleet_scalar, f64), 0u);
  EXPECT_EQ(offsetof(kfleet_scalar, i64), 8u);
}

TEST(ProblemAbi, ArgsLayout) {
  EXPECT_EQ(offsetof(kfleet_problem_args, abi_version), 0u);
  EXPECT_EQ(offsetof(kfleet_problem_args, struct_bytes), 4u);
  EXPECT_EQ(offsetof(kfleet_problem_args, problem), 8u);
  EXPECT_EQ(offsetof(kfleet_problem_args, problem_version), 40u);
  EXPECT_EQ(offsetof(kfleet_problem_args, num_tensors), 44u);
  EXPECT_EQ(offsetof(kfleet_problem_args, num_dims), 48u);
  EXPECT_EQ(offsetof(kfleet_problem_args, num_scalars), 52u);
  EXPECT_EQ(offsetof(kfleet_problem_args, dims), 56u);
  EXPECT_EQ(offsetof(kfleet_problem_args, scalars), 184u);
  EXPECT_EQ(offsetof(kfleet_problem_args, tensors), 312u);
  EXPECT_EQ(offsetof(kfleet_problem_args, workspace), 1848u);
  EXPECT_EQ(offsetof(kfleet_problem_args, workspace_bytes), 1856u);
  EXPECT_EQ(offsetof(kfleet_problem_args, reserved), 1864u);
  EXPECT_EQ(sizeof(kfleet_problem_args), 1896u);
  EXPECT_EQ(alignof(kfleet_problem_args), 8u);
  // By value as a kernel parameter: under the 4 KiB that CUDA (before 12.1) and HIP allow.
  EXPECT_LT(sizeof(kfleet_problem_args), 4096u);
}

TEST(ProblemAbi, Constants) {
  EXPECT_EQ(KFLEET_PROBLEM_ABI_VERSION, 1);
  EXPECT_EQ(KFLEET_PROBLEM_MAX_TENSORS, 12);
  EXPECT_EQ(KFLEET_PROBLEM_MAX_RANK, 6);
  EXPECT_EQ(KFLEET_PROBLEM_MAX_DIMS, 16);
  EXPECT_EQ(KFLEET_PROBLEM_MAX_SCALARS, 8);
  EXPECT_EQ(KFLEET_PROBLEM_NAME_BYTES, 32);
  EXPECT_EQ(KFLEET_TENSOR_INPUT, 0);
  EXPECT_EQ(KFLEET_TENSOR_OUTPUT, 1);
  EXPECT_EQ(KFLEET_TENSOR_INOUT, 2);
  // The dtype codes a tensor carries: the family ABI's, and the integer ones problems add.
  EXPECT_EQ(KFLEET_FP16, 0);
  EXPECT_EQ(KFLEET_BF16, 1);
  EXPECT_EQ(KFLEET_FP8_E4M3, 2);
  EXPECT_EQ(KFLEET_FP32, 3);
  EXPECT_EQ(KFLEET_INT32, 4);
  EXPECT_EQ(KFLEET_INT64, 5);
}

}  // namespace
