// The CPU references by problem name. An explicit table, not self-registration: objects of a
// static library that nothing names are dropped by the linker, and a missing entry here is
// caught by problems_gtest (every problem's reference.cpu must have one).
#include <cmath>

#include "cpu_reference.hpp"
#include "problem_cpu.hpp"

namespace kfleet::problems {

Tensors reference_rmsnorm(const CaseData&);         // rmsnorm/reference.cpp
Tensors reference_softmax(const CaseData&);         // softmax/reference.cpp
Tensors reference_rope(const CaseData&);            // rope/reference.cpp
Tensors reference_grouped_gemm(const CaseData&);    // grouped_gemm/reference.cpp
Tensors reference_topk(const CaseData&);            // topk/reference.cpp
Tensors reference_fp8_block_gemm(const CaseData&);  // fp8_block_gemm/reference.cpp

namespace {

// The two harness families, through the harness's own fp64 references (cpu_reference.hpp).
Tensors reference_attention(const CaseData& d) {
  harness::AttentionShape s;
  s.batch = static_cast<int>(d.dim("B"));
  s.heads = static_cast<int>(d.dim("H"));
  s.seq_len = static_cast<int>(d.dim("S"));
  s.head_dim = static_cast<int>(d.dim("D"));
  Tensor o = output_tensor(d, "o");
  o.real = harness::attention_reference(s, d.inputs.at("q").real, d.inputs.at("k").real,
                                        d.inputs.at("v").real, d.scalars.at("causal") != 0,
                                        d.scalars.at("softmax_scale"));
  return {{"o", o}};
}

Tensors reference_scaled_mm(const CaseData& d) {
  Tensor out = output_tensor(d, "d");
  // The inputs' real values already carry a_scale and b_scale.
  out.real = harness::scaled_mm_reference(static_cast<int>(d.dim("M")), static_cast<int>(d.dim("N")),
                                          static_cast<int>(d.dim("K")), d.inputs.at("a").real,
                                          d.inputs.at("b").real, true, 1.0, 1.0, {});
  return {{"d", out}};
}

const std::map<std::string, ReferenceFn>& table() {
  static const std::map<std::string, ReferenceFn> t = {
      {"attention", reference_attention},     {"scaled_mm", reference_scaled_mm},
      {"rmsnorm", reference_rmsnorm},         {"softmax", reference_softmax},
      {"rope", reference_rope},               {"grouped_gemm", reference_grouped_gemm},
      {"topk", reference_topk},               {"fp8_block_gemm", reference_fp8_block_gemm}};
  return t;
}

}  // namespace

ReferenceFn find_reference(const std::string& problem) {
  auto it = table().find(problem);
  return it == table().end() ? nullptr : it->second;
}

std::vector<std::string> referenced_problems() {
  std::vector<std::string> out;
  for (const auto& [k, v] : table()) out.push_back(k);
  return out;
}

}  // namespace kfleet::problems
