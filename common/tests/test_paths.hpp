#pragma once
// Where the repository is, for tests that read jobs/ and docs/: the build defines
// KFLEET_SOURCE_DIR (cmake/KfleetTargets.cmake); an environment variable of that name wins.
#include <cstdlib>
#include <filesystem>

namespace kfleet::testing {

inline std::filesystem::path source_dir() {
  if (const char* s = std::getenv("KFLEET_SOURCE_DIR"); s && *s) return s;
#ifdef KFLEET_SOURCE_DIR
  return KFLEET_SOURCE_DIR;
#else
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
#endif
}

}  // namespace kfleet::testing
