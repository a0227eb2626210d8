// Grouped GEMM, fp64: rows [ends[g-1], ends[g]) of a times expert g's [N, K] weight.
#include "../cpu/problem_data.hpp"

namespace kfleet::problems {

Tensors reference_grouped_gemm(const CaseData& d) {
  const auto G = static_cast<std::size_t>(d.dim("G")), N = static_cast<std::size_t>(d.dim("N")),
             K = static_cast<std::size_t>(d.dim("K"));
  const auto& a = d.inputs.at("a").real;
  const auto& w = d.inputs.at("w").real;
  const auto& ends = d.inputs.at("ends").real;
  Tensor out = output_tensor(d, "out");
  std::size_t begin = 0;
  for (std::size_t g = 0; g < G; ++g) {
    const auto end = static_cast<std::size_t>(ends[g]);
    for (std::size_t m = begin; m < end; ++m) {
      for (std::size_t n = 0; n < N; ++n) {
        double acc = 0;
        for (std::size_t k = 0; k < K; ++k) acc += a[m * K + k] * w[(g * N + n) * K + k];
        out.real[m * N + n] = acc;
      }
    }
    begin = end;
  }
  return {{"out", out}};
}

}  // namespace kfleet::problems
