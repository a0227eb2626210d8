#pragma once
// Where the repository is, for tests that read jobs/ and docs/: ctest sets KFLEET_SOURCE_DIR;
// running a test binary by hand falls back to this file's own location.
#include <cstdlib>
#include <filesystem>

namespace kfleet::testing {

inline std::filesystem::path source_dir() {
  if (const char* s = std::getenv("KFLEET_SOURCE_DIR"); s && *s) return s;
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

}  // namespace kfleet::testing
