#pragma once
// Filling kfleet_problem_args (problem_abi.h) from a plain description of a case: the one
// place that decides the struct's bytes, so a recorder and a measuring process that describe
// the same case produce byte-identical structs (replay checks the recorded args bytes against
// its own). Plain C++17 with no dependency beyond the ABI header, so the harness runtime can
// compile it in; problem_cpu.hpp turns a parsed definition into the description.
#include <cstdint>
#include <string>
#include <vector>

#include "kfleet_harness/problem_abi.h"

namespace kfleet::problems {

struct ArgsTensor {
  kfleet_dtype dtype = KFLEET_FP32;
  int role = KFLEET_TENSOR_INPUT;  // KFLEET_TENSOR_INPUT / _OUTPUT / _INOUT
  std::vector<std::int64_t> shape;
  std::uint64_t address = 0;       // device address of element 0 (fixed arena in replay)
};

struct ArgsSpec {
  std::string problem;
  std::uint32_t version = 0;
  std::vector<std::int64_t> dims;
  struct Scalar {
    double value = 0;
  };
  std::vector<Scalar> scalars;
  std::vector<ArgsTensor> tensors;  // in the ABI's slot order
  std::uint64_t workspace = 0, workspace_bytes = 0;
};

// Bytes of one element of `t` (0 for an unknown code).
std::size_t abi_dtype_bytes(kfleet_dtype t);

// The struct for `spec`, every byte defined (unused entries and reserved fields zero), dense
// row-major strides in elements, each tensor's allocation size. "" on success, else why the
// spec does not fit the ABI (too many tensors, a rank over 6, a name over 31 characters, ...).
std::string build_problem_args(const ArgsSpec& spec, kfleet_problem_args* out);

}  // namespace kfleet::problems
