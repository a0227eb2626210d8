#include "problem_reference_check.hpp"

#include <cmath>
#include <cstring>

#include "numeric.hpp"

namespace kfleet::harness {
namespace {

const char* dtype_word(kfleet_dtype t) {
  switch (t) {
    case KFLEET_FP16: return "fp16";
    case KFLEET_BF16: return "bf16";
    case KFLEET_FP8_E4M3: return "fp8_e4m3";
    case KFLEET_INT32: return "int32";
    case KFLEET_INT64: return "int64";
    default: return "fp32";
  }
}

// Element i of `raw` (dtype t) as a value; fp8 as its code's value, unscaled.
double element(kfleet_dtype t, const std::vector<std::uint8_t>& raw, std::size_t i) {
  switch (t) {
    case KFLEET_FP16: case KFLEET_BF16: {
      std::uint16_t b;
      std::memcpy(&b, &raw[2 * i], 2);
      return t == KFLEET_BF16 ? bf16_decode(b) : fp16_decode(b);
    }
    case KFLEET_FP8_E4M3: return fp8_e4m3_decode(raw[i]);
    case KFLEET_INT32: {
      std::int32_t v;
      std::memcpy(&v, &raw[4 * i], 4);
      return v;
    }
    case KFLEET_INT64: {
      std::int64_t v;
      std::memcpy(&v, &raw[8 * i], 8);
      return static_cast<double>(v);
    }
    default: {
      float f;
      std::memcpy(&f, &raw[4 * i], 4);
      return f;
    }
  }
}

}  // namespace

problems::CaseData spec_case_data(const ProblemSpec& spec, const SpecCase& c,
                                  const std::vector<std::vector<std::uint8_t>>& raw,
                                  const std::vector<double>& scalars) {
  problems::CaseData d;
  d.problem = spec.problem;
  d.case_name = c.name;
  for (std::size_t j = 0; j < spec.dims.size() && j < c.dims.size(); ++j) d.dims[spec.dims[j]] = c.dims[j];
  for (std::size_t j = 0; j < spec.scalars.size() && j < scalars.size(); ++j) d.scalars[spec.scalars[j].name] = scalars[j];
  for (std::size_t i = 0; i < spec.tensors.size(); ++i) {
    const SpecTensor& t = spec.tensors[i];
    if (t.role == KFLEET_TENSOR_OUTPUT) continue;
    problems::Tensor x;
    x.dtype = dtype_word(t.dtype);
    x.shape = c.shapes[i];
    x.bytes = i < raw.size() ? raw[i] : std::vector<std::uint8_t>{};
    const std::size_t n = c.elements(i);
    x.real.assign(n, 0.0);
    if (x.bytes.size() < n * problems::abi_dtype_bytes(t.dtype)) {
      d.inputs[t.name] = std::move(x);  // short: zeros (the check then fails loudly)
      continue;
    }
    for (std::size_t k = 0; k < n; ++k) x.real[k] = element(t.dtype, x.bytes, k);
    d.inputs[t.name] = std::move(x);
  }
  // fp8 values times their scales, as the references read them.
  for (std::size_t i = 0; i < spec.tensors.size(); ++i) {
    const SpecTensor& t = spec.tensors[i];
    if (t.role == KFLEET_TENSOR_OUTPUT || t.dtype != KFLEET_FP8_E4M3) continue;
    auto& x = d.inputs[t.name];
    if (t.init.scale_tensor >= 0) {
      const auto& s = d.inputs[spec.tensors[static_cast<std::size_t>(t.init.scale_tensor)].name].real;
      BlockMap m;
      m.rank = static_cast<int>(c.shapes[i].size());
      for (std::size_t k = 0; k < c.shapes[i].size() && k < t.init.block.size(); ++k) {
        m.shape[k] = c.shapes[i][k];
        m.block[k] = t.init.block[k];
      }
      for (std::size_t k = 0; k < x.real.size(); ++k) {
        const std::size_t b = block_index(k, m);
        x.real[k] *= b < s.size() ? s[b] : 0.0;
      }
    } else if (t.init.scale_scalar >= 0 && static_cast<std::size_t>(t.init.scale_scalar) < scalars.size()) {
      for (auto& v : x.real) v *= static_cast<float>(scalars[static_cast<std::size_t>(t.init.scale_scalar)]);
    }
  }
  for (const auto& o : spec.outputs) {
    const std::size_t slot = static_cast<std::size_t>(o.slot);
    problems::Tensor y;
    y.dtype = dtype_word(spec.tensors[slot].dtype);
    y.shape = c.shapes[slot];
    y.real.assign(c.elements(slot), 0.0);
    y.bytes.assign(c.elements(slot) * problems::abi_dtype_bytes(spec.tensors[slot].dtype), 0);
    d.outputs[o.name] = std::move(y);
  }
  return d;
}

ReferenceAgreement check_gpu_reference(const ProblemSpec& spec, const SpecCase& c,
                                       const problems::CaseData& data,
                                       const std::vector<std::vector<double>>& gpu) {
  ReferenceAgreement a;
  const problems::ReferenceFn cpu_ref = problems::find_generic_reference(spec.problem);
  if (!cpu_ref) {
    a.reason = "kfleet has no fp64 CPU reference of " + spec.problem + " to check the GPU reference against";
    return a;
  }
  const problems::Tensors cpu = cpu_ref(data);
  SpecInputs inputs(spec.tensors.size());
  for (int i : slots_checks_read(spec)) {
    const auto it = data.inputs.find(spec.tensors[static_cast<std::size_t>(i)].name);
    if (it != data.inputs.end()) inputs[static_cast<std::size_t>(i)] = it->second.real;
  }
  a.pass = true;
  for (std::size_t k = 0; k < spec.outputs.size(); ++k) {
    const SpecOutput& o = spec.outputs[k];
    const kfleet_dtype dt = spec.tensors[static_cast<std::size_t>(o.slot)].dtype;
    const auto it = cpu.find(o.name);
    OutputCheck r;
    if (it == cpu.end() || k >= gpu.size()) {
      r.reason = "output " + o.name + ": " + (it == cpu.end() ? "the CPU reference" : "the GPU reference") + " has no value of it";
    } else {
      std::vector<double> act(gpu[k].size());
      for (std::size_t i = 0; i < act.size(); ++i) act[i] = round_to_dtype(dt, gpu[k][i]);
      r = problem_output_check(spec, c, k, act, it->second.real, inputs);
    }
    if (!r.reason.empty() && a.pass) {
      a.pass = false;
      a.reason = r.reason;
    }
    a.outputs.push_back(r);
  }
  return a;
}

const SpecCase& smallest_case(const ProblemSpec& spec) {
  const SpecCase* best = &spec.cases.front();
  for (const auto& c : spec.cases)
    if (c.bytes < best->bytes || (c.bytes == best->bytes && c.flops < best->flops)) best = &c;
  return *best;
}

}  // namespace kfleet::harness
