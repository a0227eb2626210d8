#include "common/harness_protocol.hpp"

#include <sstream>

#include "common/subprocess.hpp"

namespace kfleet::backends {
namespace {

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string join_u64(const std::vector<std::uint64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::string dtype_arg(const nlohmann::json& d) {
  if (d.is_string()) return d.get<std::string>();
  std::string s;
  if (d.is_object()) {
    for (const auto& [k, v] : d.items()) {
      if (v.is_string()) s += (s.empty() ? "" : ",") + k + "=" + v.get<std::string>();
    }
  }
  return s;
}

}  // namespace

std::vector<std::string> harness_case_args(const JobSpec& spec, const CorrectnessCase& c,
                                           const std::string& problem_spec,
                                           const ProblemCaseArgs& problem_cases) {
  std::vector<std::string> a = {"--case", c.name};
  if (const auto it = problem_cases.find(c.name); it != problem_cases.end() && c.shape.dims.empty()) {
    // The problem's case of a family problem: its flags only (and the job's workspace).
    a.insert(a.end(), it->second.begin(), it->second.end());
    const auto& p = spec.kernel.params;
    if (p.is_object() && p.contains("workspace_mib") && p["workspace_mib"].is_number_integer())
      a.insert(a.end(), {"--workspace-mib", std::to_string(p["workspace_mib"].get<int>())});
    return a;
  }
  if (is_generic_problem(spec.kernel)) {
    // Everything else is the problem's: its case's dims and scalars, its dtypes, its checks.
    // The workspace is the larger of the job's and the problem's (PROTOCOL.md).
    a.insert(a.end(), {"--problem-spec", problem_spec});
    const auto& p = spec.kernel.params;
    if (p.is_object() && p.contains("workspace_mib") && p["workspace_mib"].is_number_integer())
      a.insert(a.end(), {"--workspace-mib", std::to_string(p["workspace_mib"].get<int>())});
    return a;
  }
  std::string shape;
  for (const auto& [k, v] : c.shape.dims) shape += (shape.empty() ? "" : ",") + k + "=" + std::to_string(v);
  a.insert(a.end(), {"--shape", shape});
  if (spec.gates.correctness) {
    const auto& g = *spec.gates.correctness;
    if (auto d = dtype_arg(g.dtype); !d.empty()) a.insert(a.end(), {"--dtype", d});
    const auto& t = g.tolerance;
    if (t.atol) a.insert(a.end(), {"--atol", num(*t.atol)});
    if (t.rtol) a.insert(a.end(), {"--rtol", num(*t.rtol)});
    if (t.max_abs) a.insert(a.end(), {"--max-abs", num(*t.max_abs)});
    if (t.rel_l2) a.insert(a.end(), {"--rel-l2", num(*t.rel_l2)});
  }
  if (c.causal) a.push_back("--causal");
  const auto& p = spec.kernel.params;
  if (p.is_object()) {
    if (p.contains("b_layout") && p["b_layout"].is_string())
      a.insert(a.end(), {"--b-layout", p["b_layout"].get<std::string>()});
    if (bool_at(p, "bias", false)) a.push_back("--bias");
    if (p.contains("softmax_scale") && p["softmax_scale"].is_number())
      a.insert(a.end(), {"--softmax-scale", num(p["softmax_scale"].get<double>())});
    if (p.contains("workspace_mib") && p["workspace_mib"].is_number_integer())
      a.insert(a.end(), {"--workspace-mib", std::to_string(p["workspace_mib"].get<int>())});
  }
  return a;
}

std::vector<std::string> harness_correctness_args(const JobSpec& spec, const CorrectnessCase& c,
                                                  const std::string& problem_spec,
                                                  const ProblemCaseArgs& problem_cases) {
  std::vector<std::string> a = {"correctness"};
  auto rest = harness_case_args(spec, c, problem_spec, problem_cases);
  a.insert(a.end(), rest.begin(), rest.end());
  if (!c.seeds.empty()) a.insert(a.end(), {"--seeds", join_u64(c.seeds)});
  return a;
}

std::vector<std::string> harness_benchmark_args(const JobSpec& spec, const CorrectnessCase& c,
                                                const std::string& problem_spec,
                                                const ProblemCaseArgs& problem_cases) {
  std::vector<std::string> a = {"benchmark"};
  auto rest = harness_case_args(spec, c, problem_spec, problem_cases);
  a.insert(a.end(), rest.begin(), rest.end());
  a.insert(a.end(), {"--seed", std::to_string(c.seeds.empty() ? 0 : c.seeds.front())});
  const auto& b = spec.benchmark;
  a.insert(a.end(), {"--min-samples", std::to_string(b.min_samples), "--max-noise-pct",
                     num(b.max_noise_pct), "--max-time-s", num(b.max_time_s), "--warmup-max-s",
                     num(b.warmup_max_s)});
  if (!b.l2_flush) a.push_back("--no-l2-flush");
  return a;
}

std::optional<CorrectnessCase> benchmark_case(const JobSpec& spec) {
  if (!spec.gates.correctness || spec.gates.correctness->cases.empty()) return std::nullopt;
  const auto& cases = spec.gates.correctness->cases;
  if (spec.gates.performance) {
    for (const auto& c : cases) {
      if (c.name == spec.gates.performance->case_name) return c;
    }
  }
  return cases.back();
}

std::string string_at(const nlohmann::json& j, const char* key, const std::string& fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}
bool bool_at(const nlohmann::json& j, const char* key, bool fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}
long long int_at(const nlohmann::json& j, const char* key, long long fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<long long>() : fallback;
}

nlohmann::json array_at(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nlohmann::json::array();
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : nlohmann::json::array();
}

std::optional<nlohmann::json> parse_harness_line(const std::string& line) {
  auto b = line.find_first_not_of(" \t\r");
  if (b == std::string::npos || line[b] != '{') return std::nullopt;
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string())
    return std::nullopt;
  return j;
}

void HarnessReport::add(const nlohmann::json& m) {
  const std::string t = string_at(m, "type", "");
  if (t == "device") device = m;
  else if (t == "warmup") warmup = m;
  else if (t == "bench") bench = m;
  else if (t == "error") error = m;
  else if (t == "reference_check" && !reference_check) reference_check = m;
  else if (t == "correctness") correctness.push_back(m);
}

nlohmann::json recorded_kernels(const std::vector<nlohmann::json>& said) {
  constexpr std::size_t kMaxKernels = 256, kMaxText = 256;
  const nlohmann::json* recorded = nullptr;
  for (const auto& m : said)
    if (string_at(m, "type", "") == "recorded") recorded = &m;
  if (!recorded) return nullptr;
  const nlohmann::json list = array_at(*recorded, "kernels");
  nlohmann::json out = nlohmann::json::array();
  std::size_t more = 0;
  for (const auto& k : list) {
    if (!k.is_object()) continue;
    if (out.size() == kMaxKernels) {
      ++more;
      continue;
    }
    nlohmann::json e = nlohmann::json::object();
    for (const char* f : {"function", "image", "file", "package", "how"}) {
      std::string v = string_at(k, f, "");
      if (v.size() > kMaxText) v.resize(kMaxText);
      e[f] = v;
    }
    e["origin"] = string_at(k, "origin", "") == "library" ? "library" : "job";
    if (e["function"].get<std::string>().empty()) continue;
    out.push_back(std::move(e));
  }
  if (out.empty()) return nullptr;
  nlohmann::json j = {{"type", "kernels"}, {"reported_by", "recorder"}, {"kernels", std::move(out)}};
  if (more) j["more"] = more;
  return j;
}

std::string bench_no_result_cause(const HarnessReport& rep) {
  if (!rep.bench || !bool_at(*rep.bench, "unsupported", false)) return "";
  const std::string named = string_at(*rep.bench, "no_result", "");
  if (!named.empty()) return named;
  // A harness built before the cause was named: its reason says "the GPU is throttled".
  const std::string why = string_at(*rep.bench, "reason", "");
  return why.find("GPU is throttled") != std::string::npos ? kGpuThrottled : "";
}

std::string harness_failure(int exit_code, int signal, bool timed_out, double timeout_s,
                            const HarnessReport& rep, const std::string& stderr_tail,
                            bool& infra) {
  infra = false;
  auto with_tail = [&](std::string s) {
    return stderr_tail.empty() ? s : s + ": " + tail_lines(stderr_tail, 1);
  };
  if (timed_out) {
    return "harness timed out after " + std::to_string(static_cast<long>(timeout_s)) +
           " s (a hang in the kernel?)";
  }
  if (signal != 0) return with_tail("harness crashed (" + signal_name(signal) + ")");
  if (exit_code == 0) return "";
  if (exit_code == 1) {
    for (const auto& c : rep.correctness) {
      if (!bool_at(c, "pass", false)) {
        std::string r = string_at(c, "reason", "failed");
        return "case " + string_at(c, "case", "?") + " seed " + std::to_string(int_at(c, "seed", 0)) +
               ": " + r;
      }
    }
    if (rep.bench && rep.bench->contains("recheck") &&
        !bool_at((*rep.bench)["recheck"], "pass", true)) {
      return "outputs of timed runs failed the re-check: " +
             string_at((*rep.bench)["recheck"], "reason", "wrong results");
    }
    if (rep.bench && bool_at(*rep.bench, "suspect", false)) {
      return "suspect: " + string_at(*rep.bench, "suspect_reason", "no reason given") +
             " (the timing cannot be trusted, so the result is not accepted)";
    }
    if (rep.bench && bool_at(*rep.bench, "unsupported", false)) {
      // No timing came out: the kernel declined the case, or (the host's fault, not the
      // kernel's) every sample was dropped by the throttle filter.
      const std::string why = string_at(*rep.bench, "reason", "no samples");
      infra = bench_no_result_cause(rep) == kGpuThrottled;
      return "benchmark gave no result: " + why +
             (infra ? " (kfleet-agent --throttle-pct sets the filter)" : "");
    }
    return with_tail("the kernel failed the stage (exit 1)");
  }
  if (rep.error) {
    const auto& e = *rep.error;
    std::string phase = string_at(e, "phase", "");
    std::string what = string_at(e, "call", "") + ": " + string_at(e, "message", "");
    if (phase == "kernel") return "kernel error: " + what;
    // Replay mode: the recorder refused the launch, or the measurer refused what it recorded;
    // both are the kernel's doing, and the message names what was seen.
    if (phase == "record" || phase == "replay") return string_at(e, "message", "refused");
    // kfleet's own GPU reference disagreed with its fp64 CPU reference: the fleet's failure.
    if (phase == "reference") {
      infra = true;
      return string_at(e, "message", "the GPU reference disagrees with the CPU reference");
    }
    infra = true;
    return "harness " + (phase.empty() ? std::string("error") : phase + " error") + ": " + what;
  }
  if (exit_code == 2 || exit_code == 3) infra = true;
  return with_tail("harness failed with exit code " + std::to_string(exit_code));
}

}  // namespace kfleet::backends
