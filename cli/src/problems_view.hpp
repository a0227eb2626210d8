#pragma once
// What `kfleet problems` prints: the library as a table, one problem's contract (its ABI slots,
// dimensions, scalars, checks and cases), and a starter kernel that compiles on the ABI.
#include <string>

#include "kfleet/common/problem.hpp"

namespace kfleet::cli {

std::string render_problem_list(const ProblemLibrary& lib);
std::string render_problem_contract(const ProblemDef& def);
std::string render_problem_starter(const ProblemDef& def);

}  // namespace kfleet::cli
