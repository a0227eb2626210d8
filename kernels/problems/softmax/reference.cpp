// Row softmax, fp64, with the row's maximum subtracted first (as every stable kernel does).
#include <algorithm>
#include <cmath>

#include "../cpu/problem_data.hpp"

namespace kfleet::problems {

Tensors reference_softmax(const CaseData& d) {
  const auto R = static_cast<std::size_t>(d.dim("R")), V = static_cast<std::size_t>(d.dim("V"));
  const auto& x = d.inputs.at("x").real;
  Tensor y = output_tensor(d, "y");
  for (std::size_t r = 0; r < R; ++r) {
    const double* row = &x[r * V];
    const double mx = *std::max_element(row, row + V);
    double sum = 0;
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(row[v] - mx);
    for (std::size_t v = 0; v < V; ++v) y.real[r * V + v] = std::exp(row[v] - mx) / sum;
  }
  return {{"y", y}};
}

}  // namespace kfleet::problems
