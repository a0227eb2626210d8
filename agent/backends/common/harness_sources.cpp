#include "common/harness_sources.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "kfleet/common/sha256.hpp"

namespace kfleet::backends {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> files_in(const fs::path& dir, std::initializer_list<const char*> exts) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    for (const char* x : exts) {
      if (e.path().extension() == x) out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The sources a unit of kernels/harness/units includes (its `#include "../src/x.cu"` lines),
// as paths under hdir.
std::vector<std::string> unit_members(const fs::path& hdir, const std::string& unit) {
  std::vector<std::string> out;
  std::istringstream in(read_whole_file(unit));
  const std::string lead = "#include \"../";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(lead, 0) != 0 || line.size() < lead.size() + 2 || line.back() != '"') continue;
    out.push_back((hdir / line.substr(lead.size(), line.size() - lead.size() - 1)).lexically_normal().string());
  }
  return out;
}

}  // namespace

std::string read_whole_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> harness_sources(const fs::path& hdir) {
  std::vector<std::string> out = files_in(hdir / "units", {".cu", ".cpp"});
  std::set<std::string> in_units;
  for (const auto& u : out)
    for (auto& m : unit_members(hdir, u)) in_units.insert(std::move(m));
  auto alone = files_in(hdir / "src", {".cu", ".cpp"});
  auto cpu = files_in(hdir / "cpu", {".cpp"});
  alone.insert(alone.end(), cpu.begin(), cpu.end());
  for (const auto& f : alone)
    if (!in_units.count(fs::path(f).lexically_normal().string())) out.push_back(f);
  return out;
}

std::string harness_source_text(const fs::path& hdir, const std::string& src) {
  std::string text = read_whole_file(src);
  if (fs::path(src).parent_path().filename() == "units")
    for (const auto& m : unit_members(hdir, src)) text += read_whole_file(m);
  return text;
}

// The problem library's GPU and CPU references (kernels/problems/<name>/reference.cu and
// reference.cpp, with problems/cpu/problem_data.hpp) are compiled into the measuring process
// through src/problem_ref_*.cu and cpu/problem_cpu_references.cpp, so a change to one counts too.
std::string harness_digest(const fs::path& hdir) {
  std::string text;
  for (const char* sub : {"units", "src", "cpu", "include/kfleet_harness"}) {
    for (const auto& f : files_in(hdir / sub, {".cu", ".cpp", ".h", ".hpp"}))
      text += f + "\n" + read_whole_file(f) + "\n";
  }
  std::error_code ec;
  std::vector<std::string> refs;
  const fs::path data = hdir.parent_path() / "problems" / "cpu" / "problem_data.hpp";
  if (fs::is_regular_file(data)) refs.push_back(data.string());
  for (fs::directory_iterator it(hdir.parent_path() / "problems", ec), end; !ec && it != end; it.increment(ec))
    for (const char* ref : {"reference.cu", "reference.cpp"})
      if (fs::is_regular_file(it->path() / ref)) refs.push_back((it->path() / ref).string());
  std::sort(refs.begin(), refs.end());
  for (const auto& f : refs) text += f + "\n" + read_whole_file(f) + "\n";
  return sha256_hex(text);
}

}  // namespace kfleet::backends
