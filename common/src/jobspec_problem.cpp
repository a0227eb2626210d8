// A job naming kernel.problem, checked against the problem library (kernels/problems;
// docs/problems.md): what the parser alone cannot know, with the same file:line:column errors.
#include "kfleet/common/problem.hpp"
#include "spec_keys.hpp"
#include "spec_sections.hpp"

namespace kfleet::spec {

void check_problem_job(Issues& is, const YAML::Node& root, const ProblemLibrary& library,
                       const JobSpec& spec) {
  const YAML::Mark top;
  const KernelSpec& k = spec.kernel;
  const YAML::Node kernel = root["kernel"];
  const YAML::Mark at = mark_of(kernel["problem"], mark_of(kernel, top));
  const std::string where = library.root.empty() ? "the problem library" : "the problem library (" + library.root + ")";
  std::vector<std::string> have, names;
  for (const auto& p : library.problems) {
    have.push_back(p.name + "@" + std::to_string(p.version));
    names.push_back(p.name);
  }
  const ProblemDef* def = library.find(k.problem);
  if (!def) {
    std::string msg = "no problem '" + k.problem + "' in " + where + "; it has " +
                      (have.empty() ? std::string("none") : join_words(have));
    if (const auto near = closest(k.problem, names); !near.empty()) msg += "; did you mean '" + near + "'?";
    is.add(at, "kernel.problem", msg);
    return;
  }
  if (def->version != k.problem_version) {
    is.add(at, "kernel.problem",
           problem_ref(k) + " is not in " + where + ": it has " + def->name + "@" +
               std::to_string(def->version) + " (the version pins the contract a kernel is judged by)");
    return;
  }
  if (!is_generic_problem(k)) return;  // attention / scaled_mm: the family path, unchanged
  if (def->abi != "generic") {
    is.add(at, "kernel.problem", problem_ref(k) + " has abi " + def->abi + ", which no family names");
    return;
  }
  if (!spec.gates.correctness) return;
  std::vector<std::string> cases;
  for (const auto& c : def->cases) cases.push_back(c.name);
  const YAML::Node cs = root["gates"]["correctness"]["cases"];
  if (!cs.IsSequence()) return;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (!cs[i].IsMap() || !cs[i]["name"].IsScalar()) continue;
    const std::string name = cs[i]["name"].Scalar();
    if (def->find_case(name)) continue;
    std::string msg = "'" + name + "' is not a case of " + problem_ref(k) + "; its cases: " + join_words(cases);
    if (const auto near = closest(name, cases); !near.empty()) msg += "; did you mean '" + near + "'?";
    is.add(mark_of(cs[i]["name"], top), "gates.correctness.cases[" + std::to_string(i) + "].name", msg);
  }
}

}  // namespace kfleet::spec
