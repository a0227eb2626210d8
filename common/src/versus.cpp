#include "kfleet/common/versus.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "kfleet/common/stats.hpp"

namespace kfleet {
namespace {

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

// "1", "1.5": p as fast_p's name writes it.
std::string p_name(double p) { return fmt("%g", p); }

std::string str_at(const nlohmann::json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "";
}

}  // namespace

bool is_problem_kernel(const KernelSpec& k) {
  return !k.problem.empty() || k.family == "attention" || k.family == "scaled_mm";
}

bool is_problem_kernel(const nlohmann::json& spec) {
  if (!spec.is_object() || !spec.contains("kernel")) return false;
  const auto& k = spec["kernel"];
  const std::string family = str_at(k, "family");
  return !str_at(k, "problem").empty() || family == "attention" || family == "scaled_mm";
}

std::string baseline_label(const std::string& baseline) {
  return baseline == kBaselineCompile ? "torch.compile" : baseline;
}

std::string format_comparison(const BaselineComparison& c) {
  const std::string label = baseline_label(c.baseline);
  if (!c.speedup || !std::isfinite(*c.speedup))
    return label + " not timed" + (c.note.empty() ? "" : " (" + c.note + ")");
  std::string s = fmt("%.2fx ", *c.speedup) + label;
  if (c.ci_low && c.ci_high && std::isfinite(*c.ci_low) && std::isfinite(*c.ci_high))
    s += fmt(" [%.2f, ", *c.ci_low) + fmt("%.2f]", *c.ci_high);
  return s;
}

std::string versus_line(const std::vector<BaselineComparison>& versus) {
  if (versus.empty()) return "";
  std::string line, case_name;
  bool simulated = false;
  for (const auto& c : versus) {
    line += (line.empty() ? "" : ", ") + format_comparison(c);
    if (case_name.empty()) case_name = c.case_name;
    simulated = simulated || c.simulated;
  }
  std::string tail = case_name;
  if (simulated) tail += (tail.empty() ? "" : ", ") + std::string("simulated");
  return tail.empty() ? line : line + " (" + tail + ")";
}

std::string versus_line(const nlohmann::json& versus) {
  if (!versus.is_array()) return "";
  std::vector<BaselineComparison> v;
  for (const auto& c : versus)
    if (c.is_object()) v.push_back(baseline_comparison_from_json(c));
  return versus_line(v);
}

std::string versus_key_text(const nlohmann::json& key) {
  if (!key.is_object()) return "";
  std::string s = str_at(key, "problem");
  if (key.contains("version") && key["version"].is_number_integer() && key["version"].get<int>() > 0)
    s += "@" + std::to_string(key["version"].get<int>());
  if (const auto c = str_at(key, "case"); !c.empty()) s += (s.empty() ? "case " : " case ") + c;
  if (const auto g = str_at(key, "gpu_class"); !g.empty()) s += (s.empty() ? "on " : " on ") + g;
  for (const auto& [field, label] : {std::pair{"torch", "torch "}, std::pair{"triton", "triton "},
                                     std::pair{"driver", "driver "}, std::pair{"measurer", "measurer "}}) {
    const std::string v = str_at(key, field);
    if (!v.empty()) s += (s.empty() ? "" : ", ") + std::string(label) + v;
  }
  return s;
}

bool verdict_correct(const Verdict& v) {
  return v.outcome == RunOutcome::passed ||
         (v.outcome == RunOutcome::rejected && v.gate == "performance");
}

nlohmann::json fast_p_json(const std::vector<VersusKernel>& kernels, const std::string& of) {
  bool simulated = false;
  for (const auto& k : kernels) simulated = simulated || k.simulated;
  nlohmann::json baselines = nlohmann::json::array();
  for (const char* b : {kBaselineEager, kBaselineCompile}) {
    std::vector<stats::FastPKernel> set;
    for (const auto& k : kernels) {
      stats::FastPKernel f;
      f.correct = k.correct;
      for (const auto& c : k.versus)
        if (c.baseline == b && c.speedup && std::isfinite(*c.speedup)) f.speedup = *c.speedup;
      set.push_back(f);
    }
    nlohmann::json ps = nlohmann::json::array();
    std::size_t timed = 0;
    for (double p : kFastPs) {
      const stats::FastP f = stats::fast_p(set, p);
      timed = f.timed;
      ps.push_back({{"p", p}, {"fast", f.fast}, {"share", f.share()}});
    }
    baselines.push_back({{"baseline", b}, {"label", baseline_label(b)}, {"timed", timed}, {"p", ps}});
  }
  return {{"kernels", kernels.size()}, {"of", of}, {"simulated", simulated}, {"baselines", baselines}};
}

std::string fast_p_text(const nlohmann::json& f) {
  // Read as any client reads kfleetd's JSON: a member of another type reads as absent.
  auto count = [](const nlohmann::json& j, const char* k) -> long long {
    return j.is_object() && j.contains(k) && j[k].is_number_integer() ? j[k].get<long long>() : 0;
  };
  auto number = [](const nlohmann::json& j, const char* k) -> std::optional<double> {
    if (j.is_object() && j.contains(k) && j[k].is_number()) return j[k].get<double>();
    return std::nullopt;
  };
  auto ps_of = [](const nlohmann::json& b) {
    return b.is_object() && b.contains("p") && b["p"].is_array() ? b["p"] : nlohmann::json::array();
  };
  const long long n = count(f, "kernels");
  if (n <= 0 || !f.contains("baselines") || !f["baselines"].is_array()) return "";
  const std::string total = std::to_string(n);
  // One line per p, one column per baseline.
  std::vector<double> ps;
  for (const auto& b : f["baselines"])
    for (const auto& p : ps_of(b))
      if (const auto x = number(p, "p"); x && std::find(ps.begin(), ps.end(), *x) == ps.end()) ps.push_back(*x);
  std::string out;
  for (double x : ps) {
    std::string line = "fast_" + p_name(x);
    line += std::string(line.size() < 10 ? 10 - line.size() : 1, ' ');
    bool first = true;
    for (const auto& b : f["baselines"])
      for (const auto& p : ps_of(b)) {
        if (number(p, "p") != x) continue;
        line += (first ? "" : "   ") + str_at(b, "label") + " " + std::to_string(count(p, "fast")) + "/" +
                total + " (" + fmt("%.0f%%", 100.0 * number(p, "share").value_or(0)) + ")";
        first = false;
      }
    out += line + "\n";
  }
  std::string timed;
  for (const auto& b : f["baselines"])
    timed += (timed.empty() ? "" : ", ") + str_at(b, "label") + " " + std::to_string(count(b, "timed")) + " of " + total;
  out += "(correct and more than p times faster than kfleet's PyTorch reference; of " + total + " " +
         str_at(f, "of") + "; with a reference timing: " + timed + ")";
  if (f.contains("simulated") && f["simulated"].is_boolean() && f["simulated"].get<bool>()) out += " [simulated]";
  return out + "\n";
}

}  // namespace kfleet
