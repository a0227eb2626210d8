#include "kfleet/common/install_layout.hpp"

namespace kfleet {
namespace fs = std::filesystem;

namespace {

// `want` under the nearest of `start` and its parents that has it, with its links resolved (a
// build tree's share/kfleet/kernels is a link to the sources: the sandbox and the compilers see
// the real folder).
fs::path nearest_above(const fs::path& start, const fs::path& want) {
  std::error_code ec;
  for (fs::path d = start; !d.empty(); d = d.parent_path()) {
    if (fs::exists(d / want, ec)) {
      fs::path real = fs::canonical(d / want, ec);
      return ec ? d / want : real;
    }
    if (d == d.root_path()) break;
  }
  return {};
}

}  // namespace

fs::path self_executable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p;
}

fs::path installed_data(const std::string& rel, const fs::path& exe) {
  if (exe.empty()) return {};
  return nearest_above(exe.parent_path(), fs::path("share") / "kfleet" / rel);
}

fs::path installed_helper(const std::string& name, const fs::path& exe) {
  if (exe.empty()) return {};
  std::error_code ec;
  if (fs::exists(exe.parent_path() / name, ec)) return exe.parent_path() / name;
  return nearest_above(exe.parent_path(), fs::path("lib") / "kfleet" / name);
}

std::string installed_data_hint(const std::string& rel, const fs::path& exe) {
  return "share/kfleet/" + rel + " in or above " +
         (exe.empty() ? std::string("this program's folder") : exe.parent_path().string());
}

}  // namespace kfleet
