// The fp64 CPU references of the library's generic problems (kernels/problems/<name>/reference.cpp),
// compiled into the harness so that the measuring process checks its GPU reference against them
// on every run (problem_reference_check.hpp), and into CI's host library through this same file:
// one compiled copy of each. A reference's own helpers live in its anonymous namespace under a
// name of its own (this is one translation unit).
#include "../../problems/cpu/problem_data.hpp"

#include "../../problems/fp8_block_gemm/reference.cpp"
#include "../../problems/grouped_gemm/reference.cpp"
#include "../../problems/rmsnorm/reference.cpp"
#include "../../problems/rope/reference.cpp"
#include "../../problems/softmax/reference.cpp"
#include "../../problems/topk/reference.cpp"

namespace kfleet::problems {

ReferenceFn find_generic_reference(const std::string& problem) {
  // An explicit table, as the GPU references' (generic_problem.cu, find_problem_reference).
  if (problem == "rmsnorm") return reference_rmsnorm;
  if (problem == "softmax") return reference_softmax;
  if (problem == "rope") return reference_rope;
  if (problem == "grouped_gemm") return reference_grouped_gemm;
  if (problem == "topk") return reference_topk;
  if (problem == "fp8_block_gemm") return reference_fp8_block_gemm;
  return nullptr;
}

}  // namespace kfleet::problems
