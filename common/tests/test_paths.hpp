#pragma once
// Where the repository is, for tests that read jobs/ and docs/: the build defines
// KFLEET_SOURCE_DIR (cmake/KfleetTargets.cmake); an environment variable of that name wins.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace kfleet::testing {

inline std::filesystem::path source_dir() {
  if (const char* s = std::getenv("KFLEET_SOURCE_DIR"); s && *s) return s;
#ifdef KFLEET_SOURCE_DIR
  return KFLEET_SOURCE_DIR;
#else
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
#endif
}

// The exploits jobs/exploits/expected.tsv expects refused at submit (state "refused"): job files
// that are invalid on purpose, which the example-job tests hold to failing instead.
inline std::set<std::string> refused_exploits() {
  std::set<std::string> out;
  std::ifstream f(source_dir() / "jobs" / "exploits" / "expected.tsv");
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    if (tab != std::string::npos && line.compare(tab + 1, 8, "refused\t") == 0) out.insert(line.substr(0, tab));
  }
  return out;
}

inline bool is_refused_exploit(const std::filesystem::path& p) {
  static const std::set<std::string> refused = refused_exploits();
  return p.parent_path().filename() == "exploits" && refused.count(p.filename().string()) > 0;
}

}  // namespace kfleet::testing
