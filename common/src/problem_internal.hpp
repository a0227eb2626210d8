#pragma once
// Between problem_parse.cpp (reading fields) and problem_check.cpp (what fields mean together).
#include <yaml-cpp/yaml.h>

#include "kfleet/common/problem.hpp"
#include "spec_yaml.hpp"

namespace kfleet::problem_detail {

// Cross-field and per-case checks of a definition whose fields all read cleanly; fills the
// dtype, shape and layout of outputs written in place of an input. `root` gives positions.
void check_problem(spec::Issues& is, const YAML::Node& root, ProblemDef& def);

}  // namespace kfleet::problem_detail
