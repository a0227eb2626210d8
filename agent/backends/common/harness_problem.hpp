#pragma once
// A job on a generic problem of the library (kernel.problem: NAME@VERSION, no family): the
// agent resolves the problem in its own library and writes it, resolved, into a file of its own
// that the job's recorder and kfleet's measuring process read (--problem-spec FILE). The job
// never supplies the contract its kernel is judged by.
#include <map>
#include <string>
#include <vector>

#include "kfleet/common/jobspec.hpp"
#include "kfleet/common/problem.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::backends {

// The agent's library: `dir`, else $KFLEET_PROBLEMS_DIR, else the source tree's kernels/problems.
std::string agent_problems_dir(const std::string& dir);

// The resolved problem's text (kfleet::problems::problem_spec_text, kernels/problems/cpu).
Result<std::string> resolved_problem_spec(const ProblemDef& def);

// Resolves k.problem@k.problem_version in the library at `library_dir` and writes its resolved
// text into `out_dir` (created; the agent's build cache, which no job process may write) as
// <name>@<version>.<hash>.spec, owned by the agent and read-only (0444); an identical file
// already there is reused. The file's path, or an error that is the fleet's, not the job's (the
// problem or version missing from this agent's library, a library that does not load).
Result<std::string> problem_spec_file(const std::string& library_dir, const KernelSpec& k,
                                      const std::string& out_dir);

// What the correctness stage of a job naming a problem takes from the agent's own library: the
// error naming the required cases the job leaves out ("" when it runs every one: kfleetd has
// refused such a job already, unless its library differs from this agent's), and, for a generic
// problem, the case the measuring process checks kfleet's GPU reference on against the fp64 CPU
// reference (the smallest of the job's cases by the problem's `bytes`).
// The harness flags of a family problem's case (attention@2, scaled_mm@4): --shape, --causal,
// --softmax-scale, the output's check (--atol, --rtol, --dot-rtol, --max-abs, --rel-l2) and an --init per
// input the case draws its own way. Every case of the problem, by name.
Result<std::map<std::string, std::vector<std::string>>> family_problem_case_args(const ProblemDef& def);
// The same, from this agent's library, for a job naming a family problem ({} for any other job).
Result<std::map<std::string, std::vector<std::string>>> family_problem_case_args(const std::string& library_dir,
                                                                                  const KernelSpec& k);

struct ProblemRunPlan {
  std::string missing_required;
  std::string reference_case;
};
Result<ProblemRunPlan> problem_run_plan(const std::string& library_dir, const JobSpec& job);

}  // namespace kfleet::backends
