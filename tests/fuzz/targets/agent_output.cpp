// What kfleet-agent reads from a job's processes: the harness's JSON lines on stdout (the kernel
// runs inside the harness, so it can print anything there) and a custom job's metric lines
// ({"metric": "gflops", "value": ...}). Each line goes through parse_harness_line into a
// HarnessReport, and harness_failure turns the report into the stage's reason for every way
// the harness can end; the whole text goes through parse_metric_lines. None of it may throw:
// the agent catches nothing there, so an exception would take the agent down.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "common/harness_backend.hpp"
#include "common/harness_protocol.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kfleet;
  const std::string text(reinterpret_cast<const char*>(data), size);

  backends::HarnessReport rep;
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) {
    if (auto m = backends::parse_harness_line(line)) {
      fuzz::check(m->is_object() && (*m)["type"].is_string(), "a harness message without a type");
      rep.add(*m);
    }
    last = line;
  }
  for (int exit_code : {0, 1, 2, 3, 4}) {
    for (int signal : {0, 11}) {
      bool infra = false;
      const std::string why =
          backends::harness_failure(exit_code, signal, false, 60, rep, last, infra);
      fuzz::check(exit_code != 0 || signal != 0 || why.empty(), "a clean exit reported a failure");
      fuzz::check(exit_code == 0 && signal == 0 ? true : !why.empty(), "a failure without a reason");
    }
  }

  for (const auto& m : backends::parse_metric_lines(text)) {
    fuzz::check(m.is_object() && m["metric"].is_string() && m["value"].is_number() &&
                    std::isfinite(m["value"].get<double>()),
                "parse_metric_lines kept a line that is not a finite metric");
  }
  return 0;
}
