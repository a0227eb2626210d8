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
  if (const auto missing = missing_required_cases(*def, spec); !missing.empty()) {
    // Blamed on the cases list, else on the nearest level the job has (read only: a YAML::Node
    // assigned to would write into the document).
    YAML::Mark at = mark_of(root, top);
    if (root.IsMap() && root["gates"].IsDefined()) {
      const YAML::Node g = root["gates"];
      at = mark_of(g, at);
      if (g.IsMap() && g["correctness"].IsDefined()) {
        const YAML::Node c = g["correctness"];
        at = mark_of(c, at);
        if (c.IsMap() && c["cases"].IsDefined()) at = mark_of(c["cases"], at);
      }
    }
    is.add(at, "gates.correctness.cases", missing_required_message(*def, missing));
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

namespace kfleet {

std::vector<std::string> missing_required_cases(const ProblemDef& def, const JobSpec& job) {
  std::vector<std::string> missing;
  for (const auto& name : def.required_cases()) {
    bool ran = false;
    if (job.gates.correctness)
      for (const auto& c : job.gates.correctness->cases) ran = ran || c.name == name;
    if (!ran) missing.push_back(name);
  }
  return missing;
}

std::string missing_required_message(const ProblemDef& def, const std::vector<std::string>& missing) {
  if (missing.empty()) return "";
  std::string names, example;
  for (const auto& m : missing) {
    names += (names.empty() ? "'" : ", '") + m + "'";
    example += (example.empty() ? "" : ", ") + std::string("{name: ") + m + ", seeds: [0]}";
  }
  const std::string ref = def.name + "@" + std::to_string(def.version);
  return "the job leaves out " + std::string(missing.size() == 1 ? "the required case " : "the required cases ") +
         names + " of " + ref + ": every job of " + ref +
         " runs its required cases (a job may add cases and seeds, not drop one); add " + example +
         " to gates.correctness.cases";
}

}  // namespace kfleet
