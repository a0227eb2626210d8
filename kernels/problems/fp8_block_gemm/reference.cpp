// fp8 block-scaled GEMM, fp64. The inputs' real values are the fp8 codes times their block's
// scale already (case_data.cpp), so the reference is the plain product of those values.
#include "../cpu/problem_data.hpp"

namespace kfleet::problems {

Tensors reference_fp8_block_gemm(const CaseData& d) {
  const auto M = static_cast<std::size_t>(d.dim("M")), N = static_cast<std::size_t>(d.dim("N")),
             K = static_cast<std::size_t>(d.dim("K"));
  const auto& a = d.inputs.at("a").real;
  const auto& b = d.inputs.at("b").real;
  Tensor out = output_tensor(d, "out");
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      double acc = 0;
      for (std::size_t k = 0; k < K; ++k) acc += a[m * K + k] * b[n * K + k];
      out.real[m * N + n] = acc;
    }
  }
  return {{"out", out}};
}

}  // namespace kfleet::problems
