#pragma once
// A test's own folder under $TMPDIR, gone with everything in it when the object goes: tests run
// side by side (ctest -j2) and leave nothing behind (scripts/test.sh checks the suite's TMPDIR is
// empty afterwards). Header-only; every gtest binary can include it (kfleet_add_gtest).
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace kfleet::testing {

class TempDir {
 public:
  // $TMPDIR/<prefix>-XXXXXX, made by mkdtemp: unique across processes and threads.
  explicit TempDir(std::string_view prefix = "kfleet-test") {
    std::string t = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp " + t + " failed");
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::filesystem::path& rel) const { return path_ / rel; }

  // Writes text to rel below the folder (making the folders between) and returns its path.
  std::filesystem::path write(const std::filesystem::path& rel, std::string_view text) const {
    const auto p = path_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace kfleet::testing
