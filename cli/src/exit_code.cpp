#include "kfleet/cli/exit_code.hpp"

namespace kfleet::cli {

std::optional<int> exit_code_for_state(JobState s) {
  switch (s) {
    case JobState::passed: return exit_passed;
    case JobState::rejected: return exit_rejected;
    case JobState::error: return exit_error;
    case JobState::cancelled: return exit_cancelled;
    default: return std::nullopt;
  }
}

std::optional<int> exit_code_for_state_name(const std::string& state) {
  auto s = job_state_from_string(state);
  if (!s) return std::nullopt;
  return exit_code_for_state(*s);
}

namespace {
int severity(int code) {
  switch (code) {
    case exit_passed: return 0;
    case exit_rejected: return 1;
    case exit_cancelled: return 2;
    case exit_error: return 3;
    case exit_usage: return 4;
    default: return 5;  // unreachable, or anything unexpected: treat as the worst
  }
}
}  // namespace

int worst_exit(int a, int b) { return severity(b) > severity(a) ? b : a; }

int exit_code_for_error(const Error& e) {
  return e.code == Errc::invalid_argument ? exit_usage : exit_unreachable;
}

}  // namespace kfleet::cli
