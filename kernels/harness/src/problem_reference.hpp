#pragma once
// The trusted GPU references of the problem library (kernels/problems/<name>/reference.cu, each
// compiled into the harness by its src/problem_ref_<name>.cu): the library's code, never a
// job's, fp32 or better, plain enough to be obviously right (one thread per output element or
// per row); not timed. A reference gets the case's dims and scalars, every input decoded to
// fp32 (an fp8 input already times its scale; an integer input as its value) plus its encoded
// bytes (integer inputs are read there), and writes every output in fp32 (an integer output as
// its value), in the definition's output order, on `stream`.
#include <cstdint>
#include <string>
#include <vector>

#include "kfleet_harness/gpu_runtime.hpp"

namespace kfleet::harness {

struct ProblemRefArgs {
  std::vector<std::int64_t> dims;                 // in problem.yaml's dims order
  std::vector<double> scalars;                    // in problem.yaml's scalars order
  std::vector<std::vector<std::int64_t>> shapes;  // per slot (kfleet_problem_args.tensors order)
  std::vector<const float*> in;                   // per slot: decoded fp32 (nullptr: an output)
  std::vector<const void*> raw;                   // per slot: the encoded input (nullptr: an output)
  std::vector<float*> out;                        // per output, in problem.yaml's outputs order
  gpuStream_t stream{};
};

using ProblemReferenceFn = void (*)(const ProblemRefArgs&);

// The registered reference of `problem`, or nullptr (generic_problem.cu holds the table).
ProblemReferenceFn find_problem_reference(const std::string& problem);

// The references, one per problem of the library (kernels/problems/<name>/reference.cu).
void gpu_reference_rmsnorm(const ProblemRefArgs&);
void gpu_reference_softmax(const ProblemRefArgs&);
void gpu_reference_rope(const ProblemRefArgs&);
void gpu_reference_grouped_gemm(const ProblemRefArgs&);
void gpu_reference_topk(const ProblemRefArgs&);
void gpu_reference_fp8_block_gemm(const ProblemRefArgs&);

// Grid size for n threads of `block` (the references' launches), at least one block.
inline unsigned ref_blocks(std::int64_t n, unsigned block) {
  return static_cast<unsigned>(n <= 0 ? 1 : (n + block - 1) / block);
}

}  // namespace kfleet::harness
