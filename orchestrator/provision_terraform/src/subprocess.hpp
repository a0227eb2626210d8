#pragma once
// Runs terraform as a child in its own process group with a wall-clock budget; stdout and
// stderr are captured together.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kfleet/common/result.hpp"

namespace kfleet::provision {

struct ProcessRun {
  int exit_code = -1;      // -1 when killed by a signal
  bool timed_out = false;  // the budget ran out and the group was interrupted, then killed
  std::string output;
  double seconds = 0;
};

// Starts argv[0] (looked up in PATH) in `cwd` with the parent's environment plus `env`.
// An error means it could not start; a failing child is a ProcessRun with its exit code.
Result<ProcessRun> run_process(const std::vector<std::string>& argv,
                               const std::filesystem::path& cwd,
                               const std::map<std::string, std::string>& env, double budget_s);

// The executable that `name` resolves to in PATH (or itself when it contains a '/').
Result<std::string> find_executable(const std::string& name);

}  // namespace kfleet::provision
