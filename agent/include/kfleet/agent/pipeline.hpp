#pragma once
// One run, start to verdict: fetch bundle -> build -> resources -> correctness -> benchmark
// -> verdict -> profile (when the spec asks and its `when` matches). Every stage emits
// stage.started / stage.finished; stage data goes out as its own events.
#include <optional>
#include <string>

#include "kfleet/agent/backend.hpp"
#include "kfleet/agent/transport.hpp"
#include "kfleet/common/clock.hpp"

namespace kfleet::agent {

struct PipelineDeps {
  Transport& transport;   // for the bundle
  Backend& backend;
  EventSink& sink;        // numbers, spools and uploads
  const StopFlag& stop;
  std::string run_dir;    // work-dir/runs/<run>; made if missing
  GpuInfo gpu;
  ClockPtr clock;         // stage durations
};

// The verdict to report, or nullopt when the run was stopped (cancel, lease lost, shutdown):
// then nothing is reported.
std::optional<Verdict> run_pipeline(const Lease& lease, PipelineDeps& d);

}  // namespace kfleet::agent
