#pragma once
// The repository's problem library (kernels/problems), loaded once for the problem tests.
#include "../../common/tests/test_paths.hpp"
#include "problem_cpu.hpp"

namespace kfleet::problems {

inline const ProblemLibrary& library() {
  static const ProblemLibrary lib =
      load_problem_library((testing::source_dir() / "kernels/problems").string());
  return lib;
}

}  // namespace kfleet::problems
