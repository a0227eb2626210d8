#pragma once
// Reading a file whole in a test: "" when it cannot be read (the test's own checks then fail).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kfleet::testing {

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace kfleet::testing
