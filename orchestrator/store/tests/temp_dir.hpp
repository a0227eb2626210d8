#pragma once
// Unique temporary directories for file-backed stores, removed when the test binary exits.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kfleet::store::testing {

inline std::vector<std::filesystem::path>& temp_dirs() {
  static std::vector<std::filesystem::path> dirs;
  return dirs;
}

inline std::string make_temp_dir() {
  auto base = std::filesystem::temp_directory_path() / "kfleet-store-XXXXXX";
  std::string tmpl = base.string();
  if (!::mkdtemp(tmpl.data())) std::abort();
  temp_dirs().emplace_back(tmpl);
  return tmpl;
}

class TempDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    for (const auto& d : temp_dirs()) std::filesystem::remove_all(d, ec);
  }
};

}  // namespace kfleet::store::testing
