#pragma once
// One run, start to verdict: fetch bundle -> build -> resources -> correctness -> benchmark
// -> verdict -> profile (when the spec asks and its `when` matches). Every stage emits
// stage.started / stage.finished; stage data goes out as its own events.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "kfleet/agent/backend.hpp"
#include "kfleet/agent/transport.hpp"
#include "kfleet/common/clock.hpp"

namespace kfleet::agent {

// How a stage that failed on the fleet's side (StageResult::fleet_error, a bundle fetch that
// kfleetd did not answer) is retried: capped exponential backoff, for up to give_up_after of
// failing, after which the run is given back.
struct FleetRetry {
  std::chrono::milliseconds initial{250};
  std::chrono::milliseconds cap{5000};
  std::chrono::milliseconds give_up_after{0};  // 0: the lease's TTL
};

// Below this much free space in the run's folder, a stage that failed is taken to have failed
// for want of disk: the agent's, not the job's.
inline constexpr std::uintmax_t kDiskFullBelowBytes = 64ull << 20;

struct PipelineDeps {
  Transport& transport;   // for the bundle
  Backend& backend;
  EventSink& sink;        // numbers, spools and uploads
  const StopFlag& stop;
  std::string run_dir;    // work-dir/runs/<run>; made if missing
  GpuInfo gpu;
  ClockPtr clock;         // stage durations and the retry budget
  FleetRetry retry = {};
  // Free bytes on the filesystem that holds `path`; empty: std::filesystem::space.
  std::function<std::uintmax_t(const std::string& path)> free_bytes = nullptr;
};

// The verdict to report, or nullopt when there is none to report: the run was stopped (cancel,
// lease lost, shutdown), or a failure of the fleet's outlasted its retries; then `gave_back`
// (when given) says why, and the caller lets the lease lapse so kfleetd requeues the job.
std::optional<Verdict> run_pipeline(const Lease& lease, PipelineDeps& d,
                                    std::string* gave_back = nullptr);

// Whether a stage's failure text says the disk is full (ENOSPC, EDQUOT).
bool says_disk_full(const std::string& text);
// Whether it says the GPU driver or runtime is missing on this host (no device, a driver too
// old, libcuda.so absent). Only taken from a stage that could not run (infra_error).
bool says_driver_missing(const std::string& text);

}  // namespace kfleet::agent
