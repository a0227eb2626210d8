// kfleet-harness: the child process the agent runs per stage (PROTOCOL.md).
#include "harness.hpp"

int main(int argc, char** argv) {
  using namespace kfleet::harness;
  Options o;
  const std::string err = parse_options(argc, argv, &o);
  if (!err.empty()) fail_usage(err);
  const DeviceInfo dev = probe_device(o.device);
  if (o.stage == "probe") {
    JsonLine("clock").num("sm_clock_mhz", measure_sm_clock_mhz()).print();
    return 0;
  }
  if (o.stage == "correctness") return run_correctness(o);
  return run_benchmark(o, dev);
}
