#pragma once
// The process side of simulated instances: each agent runs in its own process group so that
// releasing an instance also ends whatever the agent started (builds, harness children).
#include <string>
#include <vector>

#include "kfleet/common/result.hpp"

namespace kfleet::provision::detail {

// Starts argv[0] (a path) with argv, in a new process group, stdin from /dev/null and
// stdout+stderr appended to log_path. Returns the pid (= the process group id).
Result<int> spawn_in_group(const std::vector<std::string>& argv, const std::string& log_path);

// True once the process has exited; does not reap it, so its pid (and group id) cannot be
// reused until reap() runs.
bool has_exited(int pid);

void signal_group(int pgid, int sig);

// Waits for an exited (or killed) child and collects it.
void reap(int pid);

}  // namespace kfleet::provision::detail
