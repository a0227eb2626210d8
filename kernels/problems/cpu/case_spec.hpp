#pragma once
// The resolved, trusted text form of a problem of the library for the harness
// (`kfleet-harness --problem-spec FILE`; PROBLEM-ABI.md, "The problem spec"): every case's dims,
// scalars and tensor shapes evaluated here, with the parser's definition, so that the harness
// (which cannot link kfleet::common) only splits lines (kernels/harness/cpu/problem_spec.hpp
// reads it). Only kfleet's processes write it, from the repository's library.
#include <string>

#include "kfleet/common/problem.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::problems {

// The spec text of `def` (first line "kfleet-problem-spec 2"), or an error for a definition the
// harness's generic runtime cannot take (a family ABI, a name with a space).
Result<std::string> problem_spec_text(const ProblemDef& def);

}  // namespace kfleet::problems
