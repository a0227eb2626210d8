#include "common/harness_problem.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

#include "common/harness_backend.hpp"
#include "kfleet/common/install_layout.hpp"
#include "kfleet/common/sha256.hpp"

#include "case_spec.hpp"  // kernels/problems/cpu: the spec text kfleet-problem-spec writes too

namespace kfleet::backends {
namespace fs = std::filesystem;

std::string agent_problems_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  return problem_library_dir(std::getenv("KFLEET_PROBLEMS_DIR"), installed_data("kernels/problems").string());
}

Result<std::string> resolved_problem_spec(const ProblemDef& def) {
  return kfleet::problems::problem_spec_text(def);
}

Result<std::string> problem_spec_file(const std::string& library_dir, const KernelSpec& k,
                                      const std::string& out_dir) {
  const ProblemLibrary lib = load_problem_library(library_dir);
  const std::string ref = problem_ref(k);
  const ProblemDef* def = lib.find(k.problem);
  if (!def) {
    std::string have;
    for (const auto& p : lib.problems) have += (have.empty() ? "" : ", ") + p.name + "@" + std::to_string(p.version);
    std::string msg = "this agent's problem library (" + lib.root + ") has no problem '" + k.problem +
                      "' (it has " + (have.empty() ? std::string("none") : have) + ")";
    if (!lib.issues.empty()) msg += "; " + lib.issues.front().to_string();
    return make_error(Errc::not_found, msg + ": set --problems-dir or KFLEET_PROBLEMS_DIR to kfleetd's library");
  }
  if (def->version != k.problem_version) {
    return make_error(Errc::not_found, "this agent's problem library (" + lib.root + ") has " + def->name +
                                           "@" + std::to_string(def->version) + ", not " + ref +
                                           ": update the agent's library to kfleetd's");
  }
  for (const auto& i : lib.issues) {
    if (i.file.find("/" + def->name + "/") != std::string::npos)
      return make_error(Errc::invalid_argument, "problem " + ref + " does not load here: " + i.to_string());
  }
  auto text = resolved_problem_spec(*def);
  if (!text) return text.error();
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return make_error(Errc::unavailable, "cannot create " + out_dir + ": " + ec.message());
  const fs::path file = fs::path(out_dir) / (def->name + "@" + std::to_string(def->version) + "." +
                                             sha256_hex(*text).substr(0, 16) + ".spec");
  {
    // Reused only as the agent's own regular file with the very text.
    struct stat st {};
    if (::lstat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
        st.st_nlink == 1 && (st.st_mode & 0222) == 0) {
      std::ifstream in(file, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      if (ss.str() == *text) return file.string();
    }
  }
  const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  if (auto w = write_new_file(tmp.string(), *text); !w) return w.error();
  ::chmod(tmp.c_str(), 0444);
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return make_error(Errc::unavailable, "cannot write " + file.string() + ": " + ec.message());
  }
  return file.string();
}

namespace {
std::string exact_num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
}  // namespace

Result<std::map<std::string, std::vector<std::string>>> family_problem_case_args(const ProblemDef& def) {
  std::map<std::string, std::vector<std::string>> out;
  if (def.outputs.size() != 1) return make_error(Errc::invalid_argument, def.name + ": a family has one output");
  for (const auto& c : def.cases) {
    const ProblemCheck chk = def.check_of(def.outputs.front(), c);  // the case's bounds in place
    std::vector<std::string> a;
    std::string shape;
    for (const auto& d : def.dims) {
      const auto it = c.dims.find(d);
      if (it == c.dims.end()) return make_error(Errc::invalid_argument, def.name + ": case " + c.name + " has no " + d);
      shape += (shape.empty() ? "" : ",") + d + "=" + std::to_string(it->second);
    }
    a.insert(a.end(), {"--shape", shape});
    for (const auto& s : def.scalars) {
      const double v = def.scalar_value(s, c);
      if (s.name == "causal" && v != 0) a.push_back("--causal");
      if (s.name == "softmax_scale" && v > 0) a.insert(a.end(), {"--softmax-scale", exact_num(v)});
    }
    if (chk.atol >= 0) a.insert(a.end(), {"--atol", exact_num(chk.atol), "--rtol", exact_num(chk.rtol >= 0 ? chk.rtol : 0)});
    if (chk.atol >= 0 && chk.dot_rtol >= 0) a.insert(a.end(), {"--dot-rtol", exact_num(chk.dot_rtol)});
    if (chk.max_abs >= 0) a.insert(a.end(), {"--max-abs", exact_num(chk.max_abs)});
    if (chk.rel_l2 >= 0) a.insert(a.end(), {"--rel-l2", exact_num(chk.rel_l2)});
    for (const auto& [name, init] : c.init) {
      // The spec's init words (kernels/problems/cpu, problem_spec_text), joined by '/'.
      std::string words = kfleet::problems::init_spec_words(init);
      for (auto& ch : words) if (ch == ' ') ch = '/';
      a.insert(a.end(), {"--init", name + "=" + words});
    }
    out[c.name] = std::move(a);
  }
  return out;
}

Result<std::map<std::string, std::vector<std::string>>> family_problem_case_args(const std::string& library_dir,
                                                                                  const KernelSpec& k) {
  if (k.problem.empty() || is_generic_problem(k)) return std::map<std::string, std::vector<std::string>>{};
  const ProblemLibrary lib = load_problem_library(library_dir);
  const ProblemDef* def = lib.find(k.problem);
  if (!def || def->version != k.problem_version)
    return make_error(Errc::not_found, "this agent's problem library (" + lib.root + ") has no " + problem_ref(k) +
                                           ": set --problems-dir or KFLEET_PROBLEMS_DIR to kfleetd's library");
  return family_problem_case_args(*def);
}

Result<ProblemRunPlan> problem_run_plan(const std::string& library_dir, const JobSpec& job) {
  ProblemRunPlan plan;
  if (job.kernel.problem.empty()) return plan;
  const ProblemLibrary lib = load_problem_library(library_dir);
  const ProblemDef* def = lib.find(job.kernel.problem);
  if (!def || def->version != job.kernel.problem_version)
    return make_error(Errc::not_found, "this agent's problem library (" + lib.root + ") has no " +
                                           problem_ref(job.kernel) + ": set --problems-dir or KFLEET_PROBLEMS_DIR to kfleetd's library");
  plan.missing_required = missing_required_message(*def, missing_required_cases(*def, job));
  if (!is_generic_problem(job.kernel) || !job.gates.correctness || !def->bytes) return plan;
  std::int64_t best = -1;
  for (const auto& c : job.gates.correctness->cases) {
    const ProblemCase* pc = def->find_case(c.name);
    if (!pc) continue;
    auto b = def->bytes->eval(pc->dims);
    if (b && (best < 0 || *b < best)) {
      best = *b;
      plan.reference_case = c.name;
    }
  }
  return plan;
}

}  // namespace kfleet::backends
