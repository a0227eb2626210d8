// kfleet-harness: the child process the agent runs per stage (PROTOCOL.md).
#include <cstdio>

#include "harness.hpp"

int main(int argc, char** argv) {
  using namespace kfleet::harness;
  Options o;
  const std::string err = parse_options(argc, argv, &o);
  if (!err.empty()) fail_usage(err);
  if (o.result_fd >= 0) {
    // The agent's pipe: the protocol goes there, and nothing else this process runs can
    // write to it (replay mode runs none of the job's code here).
    std::FILE* f = fdopen(o.result_fd, "w");
    if (!f) fail_usage("--result-fd " + std::to_string(o.result_fd) + " is not an open descriptor");
    JsonLine::result_stream() = f;
  }
  if (o.cupti_hw_trace) {  // before probe_device makes the context, as CUPTI requires
    std::string why_not;
    std::fprintf(stderr, "kfleet-measure: CUPTI hardware event tracing %s\n",
                 ActivityTracer::enable_hw_trace(&why_not) ? "on" : ("not on: " + why_not).c_str());
  }
  const DeviceInfo dev = probe_device(o.device);
  if (o.stage == "probe") {
    JsonLine("clock").num("sm_clock_mhz", measure_sm_clock_mhz()).print();
    return 0;
  }
  // Both modes map the kernel's buffers at the same fixed addresses, so a replayed median and
  // an in-process one differ by the launch path alone, not by where the buffers landed (a 7 us
  // kernel measured 3.5 % apart on an H200 with cudaMalloc'd buffers against the arena).
  std::string why;
  const bool arena = fixed_arena_open(o.va_base, &why);
  if (!arena && (!o.record_path.empty() || !o.replay_path.empty() || !o.plan_path.empty()))
    fail_setup(why);
  if (!o.plan_path.empty()) return run_plan(o);
  if (!o.record_path.empty()) return run_record(o);
  if (o.stage == "correctness") return run_correctness(o);
  return run_benchmark(o, dev);
}
