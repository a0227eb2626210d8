#pragma once
// A broken invariant is a crash: libFuzzer keeps the input and the run fails, exactly as for a
// sanitizer report.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kfleet::fuzz {

// "ERROR:" in the line: libFuzzer's fork mode keeps only a worker's lines that hold it, so the
// long run's log names the broken invariant too.
[[noreturn]] inline void broken(const std::string& what) {
  std::fprintf(stderr, "ERROR: fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

inline void check(bool ok, const std::string& what) {
  if (!ok) broken(what);
}

}  // namespace kfleet::fuzz
