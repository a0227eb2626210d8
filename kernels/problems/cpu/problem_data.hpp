#pragma once
// A case of a problem as its fp64 CPU reference reads it: dimensions, scalars, the inputs' values
// (and bytes), and each output's dtype and shape. Plain C++ with nothing of kfleet::common, so the
// same references (kernels/problems/<name>/reference.cpp) compile into CI's host library and into
// the measuring process, which checks the GPU reference against them on every run
// (kernels/harness/cpu/problem_reference_check.hpp).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kfleet {
struct ProblemDef;
}

namespace kfleet::problems {

struct Tensor {
  std::string dtype;                  // problem.yaml's dtype
  std::vector<std::int64_t> shape;
  std::vector<double> real;           // the values a kernel's arithmetic sees (fp8: decoded * scale)
  std::vector<std::uint8_t> bytes;    // the encoded elements, as the device holds them
  std::size_t elements() const { return real.size(); }
};
using Tensors = std::map<std::string, Tensor>;

// One case at one seed: dimensions, scalars (the quantiser's scales included), inputs, and each
// output zero-filled (its dtype and shape: what a reference fills in).
struct CaseData {
  const ProblemDef* def = nullptr;  // the definition it was drawn from; null when built from a spec
  std::string problem, case_name;
  std::map<std::string, std::int64_t> dims;
  std::map<std::string, double> scalars;
  Tensors inputs;
  Tensors outputs;
  std::int64_t dim(const std::string& n) const { return dims.at(n); }
};

// Output `name` of the case, zero-filled.
inline Tensor output_tensor(const CaseData& data, const std::string& name) { return data.outputs.at(name); }

// fp64 reference outputs by name (an output in place of an input under that output's name).
using ReferenceFn = Tensors (*)(const CaseData&);

// The fp64 reference of a generic problem of the library (each kernels/problems/<name>/reference.cpp),
// or nullptr; the families' references are the harness's own (cpu_reference.hpp).
ReferenceFn find_generic_reference(const std::string& problem);

}  // namespace kfleet::problems
