// Top-k of each row: the k largest values, descending; among equal values the lowest index
// first (one valid answer: the check accepts any order of tied indices).
#include <algorithm>
#include <cstddef>
#include <numeric>

#include "../cpu/problem_data.hpp"

namespace kfleet::problems {

Tensors reference_topk(const CaseData& d) {
  const auto R = static_cast<std::size_t>(d.dim("R")), V = static_cast<std::size_t>(d.dim("V")),
             KK = static_cast<std::size_t>(d.dim("KK"));
  const auto& x = d.inputs.at("x").real;
  Tensor values = output_tensor(d, "values"), indices = output_tensor(d, "indices");
  std::vector<std::size_t> order(V);
  for (std::size_t r = 0; r < R; ++r) {
    const double* row = &x[r * V];
    std::iota(order.begin(), order.end(), 0);
    // partial_sort with the index as tie-break: the same order a stable sort gives, without
    // the temporary buffer some standard libraries warn about.
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(KK), order.end(),
                      [&](std::size_t a, std::size_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    for (std::size_t j = 0; j < KK; ++j) {
      values.real[r * KK + j] = row[order[j]];
      indices.real[r * KK + j] = static_cast<double>(order[j]);
    }
  }
  return {{"values", values}, {"indices", indices}};
}

}  // namespace kfleet::problems
