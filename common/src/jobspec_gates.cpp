// gates: resources, correctness and performance sections of a job spec.
#include <limits>
#include <set>

#include "spec_keys.hpp"
#include "spec_sections.hpp"

namespace kfleet::spec {
namespace {

constexpr std::int64_t kMaxBudget = std::int64_t(1) << 40;

ResourceBudget parse_resources(Issues& is, const MapReader& m) {
  ResourceBudget r;
  const std::pair<const char*, std::optional<std::int64_t>*> fields[] = {
      {"max_registers", &r.max_registers},   {"max_shared_bytes", &r.max_shared_bytes},
      {"max_spill_bytes", &r.max_spill_bytes}, {"max_stack_bytes", &r.max_stack_bytes},
      {"max_vgprs", &r.max_vgprs},           {"max_sgprs", &r.max_sgprs},
      {"max_lds_bytes", &r.max_lds_bytes},   {"max_scratch_bytes", &r.max_scratch_bytes}};
  for (const auto& [key, slot] : fields) {
    if (m.has(key)) {
      if (auto v = read_int(is, m.get(key), m.path(key), m.mark(), 0, kMaxBudget)) *slot = *v;
    }
  }
  return r;
}

std::optional<CorrectnessCase> parse_case(Issues& is, const YAML::Node& n, const std::string& path,
                                          const YAML::Mark& at, const std::string& problem,
                                          const std::string& family_problem) {
  MapReader m(is, n, path, "gates.correctness.cases[]", at);
  if (!m.is_map()) return std::nullopt;
  CorrectnessCase c;
  if (m.require("name", "a short label such as 'small' or 'mission'")) {
    if (auto s = read_string(is, m.get("name"), m.path("name"), m.mark())) {
      if (s->empty()) is.add(mark_of(m.get("name"), m.mark()), m.path("name"), "must not be empty");
      c.name = *s;
    }
  }
  if (!problem.empty()) {
    // A generic problem's case is one of its own: the problem gives its shape and its scalars.
    for (const char* key : {"shape", "causal"}) {
      if (m.has(key)) {
        is.add(mark_of(m.get(key), m.mark()), m.path(key),
               std::string(key) + " comes from the case of problem " + problem +
                   " that this case names; drop it (`kfleet problems show " +
                   problem.substr(0, problem.find('@')) + "` lists the cases)");
      }
    }
  } else if (!family_problem.empty() && !m.has("shape")) {
    // A job naming a family's problem (attention@2): a case without a shape is the problem's
    // case of that name, its shape, scalars, inputs and check (check_problem_job).
    if (m.has("causal"))
      is.add(mark_of(m.get("causal"), m.mark()), m.path("causal"),
             "causal comes from the case of problem " + family_problem +
                 " that this case names (it gives no shape); drop it");
  } else if (m.require("shape", "the problem size, e.g. {B: 1, H: 2, S: 128, D: 64}")) {
    const YAML::Node sh = m.get("shape");
    if (!sh.IsMap() || sh.size() == 0) {
      is.add(mark_of(sh, m.mark()), m.path("shape"),
             "must be a non-empty map of dimension: size, not " + describe(sh));
    } else {
      for (auto it = sh.begin(); it != sh.end(); ++it) {
        const std::string dim = it->first.Scalar();
        if (auto v = read_int(is, it->second, child(m.path("shape"), dim), m.mark(), 1,
                              std::int64_t(1) << 40)) {
          c.shape.dims.emplace_back(dim, *v);
        }
      }
    }
  }
  if (m.has("seeds")) {
    const YAML::Node s = m.get("seeds");
    if (!s.IsSequence()) {
      is.add(mark_of(s, m.mark()), m.path("seeds"), "must be a list like [0, 1, 2], not " + describe(s));
    } else {
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (auto v = read_int(is, s[i], item(m.path("seeds"), i), mark_of(s, m.mark()), 0,
                              std::numeric_limits<std::int64_t>::max())) {
          c.seeds.push_back(static_cast<std::uint64_t>(*v));
        }
      }
    }
  }
  if (m.has("causal") && problem.empty()) {
    if (auto b = read_bool(is, m.get("causal"), m.path("causal"), m.mark())) c.causal = *b;
  }
  return c;
}

void parse_correctness(Issues& is, const MapReader& m, const std::string& problem,
                       const std::string& family_problem, CorrectnessGate& g) {
  if (!problem.empty()) {
    // The problem's definition is the contract: its dtypes and its checks. A job that could set
    // them could loosen the check its kernel is judged by.
    if (m.has("dtype")) {
      is.add(mark_of(m.get("dtype"), m.mark()), m.path("dtype"),
             "problem " + problem + " gives every tensor's dtype; drop dtype");
    }
    if (m.has("tolerance")) {
      is.add(mark_of(m.get("tolerance"), m.mark()), m.path("tolerance"),
             "problem " + problem + " sets each output's check; a job may not change it, "
             "looser or tighter (a new check is a new version of the problem); drop tolerance");
    }
  }
  if (m.has("dtype") && problem.empty()) {
    const YAML::Node d = m.get("dtype");
    if (d.IsScalar()) {
      g.dtype = d.Scalar();
    } else if (d.IsMap()) {
      g.dtype = nlohmann::json::object();
      for (auto it = d.begin(); it != d.end(); ++it) {
        const std::string k = it->first.Scalar();
        if (auto s = read_string(is, it->second, child(m.path("dtype"), k), m.mark())) g.dtype[k] = *s;
      }
    } else {
      is.add(mark_of(d, m.mark()), m.path("dtype"),
             "must be a type name (fp16) or a map of them ({q: fp16, kv: fp8_e4m3}), not " +
                 describe(d));
    }
  }
  if (m.require("cases", problem.empty() ? "a list of {name, shape, seeds}"
                                         : "a list of {name, seeds}: the problem's cases to run")) {
    const YAML::Node cs = m.get("cases");
    if (!cs.IsSequence() || cs.size() == 0) {
      is.add(mark_of(cs, m.mark()), m.path("cases"), "must be a non-empty list of cases, not " + describe(cs));
    } else {
      std::set<std::string> names;
      for (std::size_t i = 0; i < cs.size(); ++i) {
        auto c = parse_case(is, cs[i], item(m.path("cases"), i), mark_of(cs, m.mark()), problem, family_problem);
        if (!c) continue;
        if (!c->name.empty() && !names.insert(c->name).second) {
          is.add(mark_of(cs[i], m.mark()), item(m.path("cases"), i) + ".name",
                 "case name '" + c->name + "' is used twice; case names must be unique");
        }
        g.cases.push_back(std::move(*c));
      }
    }
  }
  if (m.has("tolerance") && problem.empty()) {
    MapReader t(is, m.get("tolerance"), m.path("tolerance"), "gates.correctness.tolerance", m.mark());
    if (t.is_map()) {
      const std::pair<const char*, std::optional<double>*> fields[] = {
          {"atol", &g.tolerance.atol}, {"rtol", &g.tolerance.rtol},
          {"max_abs", &g.tolerance.max_abs}, {"rel_l2", &g.tolerance.rel_l2}};
      for (const auto& [key, slot] : fields) {
        if (t.has(key)) {
          if (auto v = read_number(is, t.get(key), t.path(key), t.mark(), 0, false, 1e30)) *slot = *v;
        }
      }
    }
  }
}

void parse_compare_to(Issues& is, const YAML::Node& n, const std::string& path,
                      const YAML::Mark& at, bool has_parent, CompareTo& out) {
  if (n.IsScalar()) {
    const std::string s = n.Scalar();
    if (s == "parent") {
      out.kind = CompareTo::Kind::parent;
      if (!has_parent) {
        is.add(mark_of(n, at), path,
               "compare_to: parent needs a 'parent' field naming the job to compare against");
      }
    } else if (s == "baseline") {
      out.kind = CompareTo::Kind::baseline;
    } else {
      is.add(mark_of(n, at), path,
             "'" + s + "' is not a comparison; use parent, baseline, {job: ID}, {value_us: X}, "
             "{value_ms: X} or {reference: NAME}");
    }
    return;
  }
  MapReader m(is, n, path, "gates.performance.compare_to", at);
  if (!m.is_map()) return;
  int forms = 0;
  for (const char* k : {"job", "value_us", "value_ms", "reference"}) forms += m.has(k) ? 1 : 0;
  if (forms != 1) {
    is.add(m.mark(), path,
           "must hold exactly one of job, value_us, value_ms, reference (found " +
               std::to_string(forms) + ")");
    return;
  }
  if (m.has("label")) {
    if (!m.has("value_us") && !m.has("value_ms")) {
      is.add(mark_of(m.get("label"), m.mark()), m.path("label"),
             "label names a fixed value_us / value_ms; a job or reference already has a name");
    } else if (auto s = read_string(is, m.get("label"), m.path("label"), m.mark())) {
      out.label = *s;
    }
  }
  if (m.has("job")) {
    out.kind = CompareTo::Kind::job;
    if (auto v = read_int(is, m.get("job"), m.path("job"), m.mark(), 1,
                          std::numeric_limits<std::int64_t>::max())) {
      out.job_id = *v;
    }
  } else if (m.has("value_us") || m.has("value_ms")) {
    out.kind = CompareTo::Kind::value;
    const char* key = m.has("value_us") ? "value_us" : "value_ms";
    if (auto v = read_number(is, m.get(key), m.path(key), m.mark(), 0, false, 1e12)) {
      out.value_us = m.has("value_ms") ? *v * 1000.0 : *v;
    }
  } else {
    out.kind = CompareTo::Kind::reference;
    if (auto s = read_string(is, m.get("reference"), m.path("reference"), m.mark())) {
      if (s->empty()) is.add(mark_of(m.get("reference"), m.mark()), m.path("reference"), "must not be empty");
      out.label = *s;
    }
  }
}

void parse_performance(Issues& is, const MapReader& m, bool has_parent,
                       const std::optional<CorrectnessGate>& correctness, PerformanceGate& p) {
  if (m.require("case", "the correctness case to benchmark, e.g. mission")) {
    if (auto s = read_string(is, m.get("case"), m.path("case"), m.mark())) {
      p.case_name = *s;
      std::vector<std::string> names;
      if (correctness) {
        for (const auto& c : correctness->cases) names.push_back(c.name);
      }
      if (std::find(names.begin(), names.end(), *s) == names.end()) {
        std::string msg = "names case '" + *s + "', which gates.correctness.cases does not have";
        if (!names.empty()) msg += "; cases: " + join_words(names);
        const auto near = closest(*s, names);
        if (!near.empty()) msg += "; did you mean '" + near + "'?";
        is.add(mark_of(m.get("case"), m.mark()), m.path("case"), msg);
      }
    }
  }
  if (m.has("metric")) {
    if (auto s = read_enum(is, m.get("metric"), m.path("metric"), m.mark(), metrics())) p.metric = *s;
  }
  if (m.has("compare_to")) {
    parse_compare_to(is, m.get("compare_to"), m.path("compare_to"), m.mark(), has_parent, p.compare_to);
  }
  if (m.has("threshold_pct")) {
    if (auto v = read_number(is, m.get("threshold_pct"), m.path("threshold_pct"), m.mark(), 0, false, 100)) {
      p.threshold_pct = *v;
    }
  }
}

}  // namespace

void parse_gates(Issues& is, const YAML::Node& n, const YAML::Mark& at, bool has_parent,
                 const std::string& problem, const std::string& family_problem, GatesSpec& out) {
  MapReader m(is, n, "gates", "gates", at);
  if (!m.is_map()) return;
  if (m.has("resources")) {
    MapReader r(is, m.get("resources"), m.path("resources"), "gates.resources", m.mark());
    if (r.is_map()) out.resources = parse_resources(is, r);
  }
  if (m.has("correctness")) {
    MapReader c(is, m.get("correctness"), m.path("correctness"), "gates.correctness", m.mark());
    if (c.is_map()) {
      out.correctness.emplace();
      parse_correctness(is, c, problem, family_problem, *out.correctness);
    }
  }
  if (m.has("performance")) {
    MapReader p(is, m.get("performance"), m.path("performance"), "gates.performance", m.mark());
    if (p.is_map()) {
      out.performance.emplace();
      parse_performance(is, p, has_parent, out.correctness, *out.performance);
    }
  }
}

}  // namespace kfleet::spec
