#pragma once
// The host side of the problem library (kernels/problems; docs/problems.md): a case's inputs
// drawn from a definition's distributions, the trusted CPU references (fp64), each output's
// check, and the do-nothing outputs those checks must reject. Plain C++ on the host; it reads
// definitions through kfleet::common's parser, so it sits above common, as the agent does, and
// is not compiled into a job's binary.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kfleet/common/problem.hpp"
#include "problem_args.hpp"
#include "problem_data.hpp"

namespace kfleet::problems {

// Draws every input of `c` for `seed` as the harness draws it on the GPU (the same counter-based
// draws, kernels/harness/cpu/problem_inputs.hpp, for (problem, "case/" + case, seed, slot)), so
// that CI's CPU emulations see the very inputs a kernel gets in the correctness stage.
Result<CaseData> make_case(const ProblemDef& def, const ProblemCase& c, std::uint64_t seed);

// Every output of `def` for these dims, zero-filled (CaseData::outputs).
Result<Tensors> blank_outputs(const ProblemDef& def, const std::map<std::string, std::int64_t>& dims);

// The registered CPU reference of a problem (the generic ones and the two families), or nullptr.
ReferenceFn find_reference(const std::string& problem);
std::vector<std::string> referenced_problems();  // every problem with a CPU reference

// A value as the output's dtype holds it (what a perfect kernel writes), decoded again.
double round_to(const std::string& dtype, double x);
Tensor rounded(const Tensor& t);

// "" when `actual` passes the output's check against `reference`, else why not, in words.
std::string check_output(const CaseData& data, const ProblemTensor& out, const Tensor& reference,
                         const Tensor& actual);

// What a lazy kernel would write for `lazy` (rounded to the output's dtype).
Tensor lazy_output(const CaseData& data, const ProblemTensor& out, const ProblemLazy& lazy,
                   const Tensor& reference);

// The generic ABI's description of a case (slot order, dtype codes, dims, scalars with the
// quantiser's scales), with `addresses[i]` the device address of slot i. Errors for a
// definition whose abi is not generic.
Result<ArgsSpec> args_spec(const CaseData& data, const std::vector<std::uint64_t>& addresses,
                           std::uint64_t workspace, std::uint64_t workspace_bytes);
kfleet_dtype abi_dtype(const std::string& dtype);

}  // namespace kfleet::problems
