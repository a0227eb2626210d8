#pragma once
// What `kfleet problems` prints: the library as a table, one problem's contract (its ABI slots,
// dimensions, scalars, checks and cases), and a starter kernel that compiles on the ABI.
#include <string>

#include <nlohmann/json.hpp>

#include "kfleet/cli/app.hpp"
#include "kfleet/common/problem.hpp"

namespace kfleet::cli {

std::string render_problem_list(const ProblemLibrary& lib);
std::string render_problem_contract(const ProblemDef& def);
std::string render_problem_starter(const ProblemDef& def);

// The library's folder: `dir`, else $KFLEET_PROBLEMS_DIR, else this build's source tree.
std::string problems_dir(const EnvLookup& env, const std::string& dir);
// One line of the list as JSON (`kfleet problems --json`, the MCP list_problems tool).
nlohmann::json problem_summary_json(const ProblemDef& def);
// The contract as JSON: slots (index, name, role, dtype, shape), dims, scalars, outputs'
// checks and do-nothing outputs, cases with their dims, and how a job names the problem.
nlohmann::json problem_contract_json(const ProblemDef& def);

}  // namespace kfleet::cli
