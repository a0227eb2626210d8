#pragma once
// Exit statuses are the CLI's contract with CI scripts: a pipeline branches on them, so they
// never change meaning.
#include <optional>
#include <string>

#include "kfleet/common/model.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::cli {

enum ExitCode : int {
  exit_passed = 0,
  exit_rejected = 1,
  exit_usage = 2,        // bad flags, an invalid job file, a config the user must fix
  exit_error = 3,        // the job ended in error (build broke, agent lost too often, ...)
  exit_cancelled = 4,
  exit_unreachable = 5,  // kfleetd could not be reached or answered with an API error
};

// The exit status for a job that ended in `s`; nullopt while the job is still going.
std::optional<int> exit_code_for_state(JobState s);
std::optional<int> exit_code_for_state_name(const std::string& state);

// Several jobs give one status: the most severe, ordered
// passed < rejected < cancelled < error < invalid job < unreachable.
int worst_exit(int a, int b);

// How an API or transport failure ends the command: 2 for a request the user must fix, else 5.
int exit_code_for_error(const Error& e);

}  // namespace kfleet::cli
