#pragma once
// The rules of a job's state change, shared by both backends' change_job_state.
#include <cstdint>
#include <optional>
#include <string>

#include "kfleet/common/result.hpp"
#include "kfleet/store/store.hpp"

namespace kfleet::store {

// Why job `id` (`job`: as loaded, nullopt if there is none) may not move to `s`, or nullopt if
// it may. Checked before any write, so a refusal writes nothing.
inline std::optional<Error> state_change_refusal(std::int64_t id,
                                                 const std::optional<JobRecord>& job, JobState s) {
  const std::string name = "job " + std::to_string(id);
  if (!job) return make_error(Errc::not_found, name + " not found");
  if (is_terminal(job->state)) {
    return make_error(Errc::conflict, name + " is already " + to_string(job->state) +
                                          " and cannot change; submit it again to rerun it");
  }
  if (is_active(s) && job->current_run_id == 0) {
    // Active means an agent holds it; only grant_lease can make that true.
    return make_error(Errc::invalid_argument, name + " has no run, so it cannot be " +
                                                  to_string(s) +
                                                  "; a job becomes active by being leased");
  }
  if (job->current_run_id != 0 && !is_terminal(s) && !is_active(s)) {
    // Requeueing a held job would let a second agent run it beside the first.
    return make_error(Errc::conflict, name + " is held by run " +
                                          std::to_string(job->current_run_id) +
                                          "; cancel it or let its lease expire first");
  }
  return std::nullopt;
}

}  // namespace kfleet::store
