// The CPU references by problem name. An explicit table, not self-registration: objects of a
// static library that nothing names are dropped by the linker, and a missing entry here is
// caught by problems_gtest (every problem's reference.cpu must have one).
#include <cmath>

#include "cpu_reference.hpp"
#include "problem_cpu.hpp"

namespace kfleet::problems {

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
  // The generic problems' references are compiled once, in the harness's host library
  // (kernels/harness/cpu/problem_cpu_references.cpp): the measuring process runs the same ones.
  static const std::map<std::string, ReferenceFn> t = [] {
    std::map<std::string, ReferenceFn> m = {{"attention", reference_attention}, {"scaled_mm", reference_scaled_mm}};
    for (const char* p : {"rmsnorm", "softmax", "rope", "grouped_gemm", "topk", "fp8_block_gemm"})
      m[p] = find_generic_reference(p);
    return m;
  }();
  return t;
}

}  // namespace

kfleet_dtype abi_dtype(const std::string& d) {
  if (d == "fp16") return KFLEET_FP16;
  if (d == "bf16") return KFLEET_BF16;
  if (d == "fp8_e4m3") return KFLEET_FP8_E4M3;
  if (d == "int32") return KFLEET_INT32;
  if (d == "int64") return KFLEET_INT64;
  return KFLEET_FP32;
}

Result<ArgsSpec> args_spec(const CaseData& data, const std::vector<std::uint64_t>& addresses,
                           std::uint64_t workspace, std::uint64_t workspace_bytes) {
  const ProblemDef& def = *data.def;
  if (def.abi != "generic")
    return make_error(Errc::invalid_argument, def.name + " uses the family ABI " + def.abi + ", not kfleet_problem_args");
  const auto slots = def.abi_slots();
  if (addresses.size() != slots.size())
    return make_error(Errc::invalid_argument, std::to_string(addresses.size()) + " addresses for " +
                                                  std::to_string(slots.size()) + " tensors");
  ArgsSpec s;
  s.problem = def.name;
  s.version = static_cast<std::uint32_t>(def.version);
  for (const auto& n : def.dims) s.dims.push_back(data.dims.at(n));
  for (const auto& sc : def.scalars) s.scalars.push_back({data.scalars.at(sc.name)});
  ProblemCase c;
  c.dims = data.dims;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    ArgsTensor t;
    t.dtype = abi_dtype(slots[i].tensor->dtype);
    t.role = slots[i].role == "input" ? KFLEET_TENSOR_INPUT : slots[i].role == "inout" ? KFLEET_TENSOR_INOUT : KFLEET_TENSOR_OUTPUT;
    auto shape = def.shape_of(*slots[i].tensor, c);
    if (!shape) return shape.error();
    t.shape = *shape;
    t.address = addresses[i];
    s.tensors.push_back(std::move(t));
  }
  s.workspace = workspace;
  s.workspace_bytes = workspace_bytes;
  return s;
}

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
