// The problem library on disk (kernels/problems/<name>/problem.yaml) and the helpers every
// reader of a definition needs: the generic ABI's slot order, shapes per case, scalar values.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "kfleet/common/problem.hpp"

namespace kfleet {
namespace fs = std::filesystem;

const ProblemTensor* ProblemDef::input(const std::string& n) const {
  for (const auto& t : inputs)
    if (t.name == n) return &t;
  return nullptr;
}
const ProblemTensor* ProblemDef::output(const std::string& n) const {
  for (const auto& t : outputs)
    if (t.name == n) return &t;
  return nullptr;
}
const ProblemCase* ProblemDef::find_case(const std::string& n) const {
  for (const auto& c : cases)
    if (c.name == n) return &c;
  return nullptr;
}
int ProblemDef::dim_index(const std::string& n) const {
  auto it = std::find(dims.begin(), dims.end(), n);
  return it == dims.end() ? -1 : static_cast<int>(it - dims.begin());
}

std::vector<ProblemDef::Slot> ProblemDef::abi_slots() const {
  std::vector<Slot> out;
  for (const auto& t : inputs) {
    const bool inout = std::any_of(outputs.begin(), outputs.end(),
                                   [&](const ProblemTensor& o) { return o.in_place_of == t.name; });
    out.push_back({&t, inout ? "inout" : "input"});
  }
  for (const auto& o : outputs)
    if (o.in_place_of.empty()) out.push_back({&o, "output"});
  return out;
}

Result<std::vector<std::int64_t>> ProblemDef::shape_of(const ProblemTensor& t, const ProblemCase& c) const {
  std::vector<std::int64_t> s;
  for (const auto& e : t.shape) {
    auto v = e.eval(c.dims);
    if (!v) return v.error();
    s.push_back(*v);
  }
  return s;
}

const ProblemInit& ProblemDef::init_of(const ProblemTensor& t, const ProblemCase& c) const {
  auto it = c.init.find(t.name);
  return it == c.init.end() ? t.init : it->second;
}

ProblemCheck ProblemDef::check_of(const ProblemTensor& t, const ProblemCase& c) const {
  ProblemCheck out = t.check;
  const auto it = c.check.find(t.name);
  if (it == c.check.end()) return out;
  for (const auto& [mine, theirs] : {std::pair<double*, double>{&out.atol, it->second.atol}, {&out.rtol, it->second.rtol},
                                     {&out.max_abs, it->second.max_abs}, {&out.rel_l2, it->second.rel_l2},
                                     {&out.dot_rtol, it->second.dot_rtol}})
    if (theirs >= 0) *mine = theirs;
  return out;
}

std::vector<std::string> ProblemDef::required_cases() const {
  std::vector<std::string> out;
  for (const auto& c : cases)
    if (c.required) out.push_back(c.name);
  return out;
}

double ProblemDef::scalar_value(const ProblemScalar& s, const ProblemCase& c) const {
  auto it = c.scalars.find(s.name);
  if (it != c.scalars.end()) return it->second;
  return s.value.value_or(std::numeric_limits<double>::quiet_NaN());
}

const ProblemDef* ProblemLibrary::find(const std::string& name) const {
  for (const auto& p : problems)
    if (p.name == name) return &p;
  return nullptr;
}

std::string problem_file_path(const std::string& root, const std::string& problem_dir,
                              const ProblemFile& f) {
  if (f.path.rfind("lib:", 0) == 0) return (fs::path(root).parent_path() / f.path.substr(4)).string();
  return (fs::path(problem_dir) / f.path).string();
}

std::string problem_library_dir(const char* env_value, const std::string& fallback) {
  return env_value && *env_value ? std::string(env_value) : fallback;
}

ProblemLibrary load_problem_library(const std::string& root_in) {
  ProblemLibrary lib;
  // Without a trailing slash, so that parent_path() is kernels/.
  lib.root = fs::path(root_in).lexically_normal().string();
  while (lib.root.size() > 1 && lib.root.back() == '/') lib.root.pop_back();
  std::error_code ec;
  if (!fs::is_directory(lib.root, ec)) {
    lib.issues.push_back({lib.root, 0, 0, "", "no problem library here (a folder of <name>/problem.yaml)"});
    return lib;
  }
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(lib.root, ec))
    if (e.is_directory() && fs::exists(e.path() / "problem.yaml")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    const std::string file = (dir / "problem.yaml").string();
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    auto p = parse_problem(text.str(), file);
    lib.issues.insert(lib.issues.end(), p.issues.begin(), p.issues.end());
    if (!p.def) continue;
    if (p.def->name != dir.filename().string())
      lib.issues.push_back({file, 1, 1, "problem", "'" + p.def->name + "' lives in folder " +
                            dir.filename().string() + "; the folder is named after the problem"});
    std::vector<ProblemFile> files;
    for (const auto& [k, f] : p.def->reference) files.push_back(f);
    for (const auto& k : p.def->kernels) files.push_back(k.source);
    for (const auto& f : files) {
      const std::string path = problem_file_path(lib.root, dir.string(), f);
      if (!fs::is_regular_file(path, ec))
        lib.issues.push_back({file, f.line, f.column, f.field, "'" + f.path + "' does not exist (looked for " + path + ")"});
    }
    lib.problems.push_back(std::move(*p.def));
  }
  return lib;
}

}  // namespace kfleet
