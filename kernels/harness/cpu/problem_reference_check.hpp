#pragma once
// The measuring process checks its own GPU reference (PROBLEM-ABI.md, "The GPU reference,
// checked"): on a small case of every run, the library's fp64 CPU reference
// (kernels/problems/<name>/reference.cpp) is computed from the very bytes the GPU drew and compared
// with the GPU reference by each output's own check, the GPU's values rounded to the output's
// dtype as a perfect kernel writes them. A disagreement is the fleet's failure, never the
// kernel's. Plain C++ (CI runs it against the CPU side's draws).
#include <cstdint>
#include <string>
#include <vector>

#include "../../problems/cpu/problem_data.hpp"
#include "problem_checks.hpp"
#include "problem_spec.hpp"

namespace kfleet::harness {

// The case's data as the CPU references read it, from each input slot's bytes as the device
// holds them (`raw[i]`; empty for outputs) and the scalars (the quantiser's filled in).
problems::CaseData spec_case_data(const ProblemSpec& spec, const SpecCase& c,
                                  const std::vector<std::vector<std::uint8_t>>& raw,
                                  const std::vector<double>& scalars);

struct ReferenceAgreement {
  bool pass = false;
  std::string reason;                // "" when they agree
  std::vector<OutputCheck> outputs;  // per output of the spec
};

// `gpu[k]`: output k of the GPU reference (its fp32 values) for `data`.
ReferenceAgreement check_gpu_reference(const ProblemSpec& spec, const SpecCase& c,
                                       const problems::CaseData& data,
                                       const std::vector<std::vector<double>>& gpu);

// The smallest case of the spec (fewest bytes, then flops, then the first): the one a run
// checks its reference on when it is not told which.
const SpecCase& smallest_case(const ProblemSpec& spec);

}  // namespace kfleet::harness
