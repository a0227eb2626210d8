// Rotary embedding (NeoX halves), fp64, on Q and K; the outputs are the inputs' slots.
#include "../cpu/problem_data.hpp"

namespace kfleet::problems {
namespace {

Tensor rotate(const CaseData& d, const std::string& name, std::size_t heads) {
  const auto T = static_cast<std::size_t>(d.dim("T")), D = static_cast<std::size_t>(d.dim("D"));
  const std::size_t half = D / 2;
  const auto& x = d.inputs.at(name).real;
  const auto& pos = d.inputs.at("positions").real;
  const auto& cs = d.inputs.at("cos_sin").real;
  Tensor out = output_tensor(d, name);
  for (std::size_t t = 0; t < T; ++t) {
    const double* c = &cs[static_cast<std::size_t>(pos[t]) * D];
    for (std::size_t h = 0; h < heads; ++h) {
      const double* in = &x[(t * heads + h) * D];
      double* o = &out.real[(t * heads + h) * D];
      for (std::size_t i = 0; i < half; ++i) {
        o[i] = in[i] * c[i] - in[half + i] * c[half + i];
        o[half + i] = in[half + i] * c[i] + in[i] * c[half + i];
      }
    }
  }
  return out;
}

}  // namespace

Tensors reference_rope(const CaseData& d) {
  return {{"q", rotate(d, "q", static_cast<std::size_t>(d.dim("HQ")))},
          {"k", rotate(d, "k", static_cast<std::size_t>(d.dim("HK")))}};
}

}  // namespace kfleet::problems
