// Error lines and exit statuses (PROTOCOL.md, "Exit status").
#include <cstdio>
#include <cstdlib>

#include "harness.hpp"

namespace kfleet::harness {
namespace {
const char* g_phase = "setup";
}

void set_phase(const char* phase) { g_phase = phase; }

void fail_usage(const std::string& message) {
  JsonLine("error").str("phase", "usage").str("message", message).print();
  std::exit(2);
}

void fail_setup(const std::string& message) {
  JsonLine("error").str("phase", "setup").str("message", message).print();
  std::exit(3);
}

void fail_replay(const std::string& message) {
  JsonLine("error").str("phase", "replay").str("message", "replay mode refused the recording: " + message).print();
  std::exit(4);
}

}  // namespace kfleet::harness

void kfleet_harness_gpu_failure(int code, const char* name, const char* message,
                                const char* call, const char* file, int line) {
  using kfleet::harness::JsonLine;
  JsonLine("error")
      .str("phase", kfleet::harness::g_phase)
      .str("call", call)
      .str("where", std::string(file) + ":" + std::to_string(line))
      .integer("code", code)
      .str("name", name ? name : "")
      .str("message", std::string(message ? message : "") +
                          (std::string(kfleet::harness::g_phase) == "kernel" &&
                                   kfleet::harness::inputs_are_read_only_now()
                               ? " (the inputs are mapped read-only while the kernel runs: a "
                                 "write to an input, even one restored later, faults here)"
                               : ""))
      .print();
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, call, message ? message : "");
  std::exit(3);
}
