// kfleet-problem-spec LIBRARY_DIR NAME: the spec text of one problem of the library
// (case_spec.hpp), for the harness's --problem-spec (scripts/gpu-problems-direct.sh writes the
// library's specs with it; the agent writes them from its own copy of the library).
#include <cstdio>
#include <iostream>

#include "case_spec.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: kfleet-problem-spec LIBRARY_DIR NAME\n";
    return 2;
  }
  const auto lib = kfleet::load_problem_library(argv[1]);
  for (const auto& i : lib.issues) std::cerr << i.to_string() << "\n";
  if (!lib.issues.empty()) return 1;
  const kfleet::ProblemDef* def = lib.find(argv[2]);
  if (!def) {
    std::cerr << "kfleet-problem-spec: no problem '" << argv[2] << "' in " << argv[1] << "\n";
    return 1;
  }
  auto text = kfleet::problems::problem_spec_text(*def);
  if (!text) {
    std::cerr << "kfleet-problem-spec: " << text.error().message << "\n";
    return 1;
  }
  std::cout << *text;
  return std::cout.good() ? 0 : 1;
}
