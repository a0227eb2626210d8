#pragma once
// Section parsers of the job spec, split by file so each stays small. Each fills `out` with what
// it could read and records every problem in `is`.
#include "spec_yaml.hpp"

namespace kfleet::spec {

// `has_parent` lets compare_to: parent be checked against the job's own parent field.
// `problem`: "rmsnorm@2" for a job on a generic problem (its cases, dtypes and checks are the
// problem's), else "".
void parse_gates(Issues& is, const YAML::Node& n, const YAML::Mark& at, bool has_parent,
                 const std::string& problem, GatesSpec& out);

// A job naming kernel.problem, checked against the library: the problem and version exist, and
// (a generic problem) each correctness case is one of the problem's. jobspec_problem.cpp.
void check_problem_job(Issues& is, const YAML::Node& root, const ProblemLibrary& library,
                       const JobSpec& spec);

}  // namespace kfleet::spec
