// RMSNorm, fp64: y[t, i] = x[t, i] / sqrt(mean_j x[t, j]^2 + eps) * weight[i].
#include <cmath>

#include "../cpu/problem_data.hpp"

namespace kfleet::problems {

Tensors reference_rmsnorm(const CaseData& d) {
  const auto T = static_cast<std::size_t>(d.dim("T")), H = static_cast<std::size_t>(d.dim("H"));
  const auto& x = d.inputs.at("x").real;
  const auto& w = d.inputs.at("weight").real;
  const double eps = d.scalars.at("eps");
  Tensor y = output_tensor(d, "y");
  for (std::size_t t = 0; t < T; ++t) {
    double ss = 0;
    for (std::size_t i = 0; i < H; ++i) ss += x[t * H + i] * x[t * H + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(H) + eps);
    for (std::size_t i = 0; i < H; ++i) y.real[t * H + i] = x[t * H + i] * inv * w[i];
  }
  return {{"y", y}};
}

}  // namespace kfleet::problems
