// problem.yaml -> ProblemDef. Reads every field with the job parser's typed readers
// (spec_yaml.hpp), so an issue names file:line:column: field the same way; the cross-field and
// per-case checks are in problem_check.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <set>

#include "kfleet/common/problem.hpp"
#include "problem_internal.hpp"
#include "spec_keys.hpp"
#include "spec_yaml.hpp"

namespace kfleet {
namespace {

using spec::child;
using spec::describe;
using spec::Issues;
using spec::item;
using spec::MapReader;
using spec::mark_of;

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();
constexpr double kHuge = 1e9;  // a bound for values, small enough to print

const std::vector<std::string>& keys(std::string_view level) {
  for (const auto& t : problem_vocab::key_tables())
    if (t.level == level) return t.keys;
  std::abort();  // a level the table does not know: a programming error
}

bool is_identifier(const std::string& s) {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_]*");
  return std::regex_match(s, re);
}

// A list node, or an issue and an empty node.
bool expect_list(Issues& is, const YAML::Node& n, const std::string& path, const YAML::Mark& at,
                 const char* example) {
  if (n.IsSequence()) return true;
  is.add(mark_of(n, at), path, std::string("must be a list like ") + example + ", not " + describe(n));
  return false;
}

std::optional<DimExpr> read_expr(Issues& is, const YAML::Node& n, const std::string& path,
                                 const YAML::Mark& at, const std::vector<std::string>& dims) {
  auto s = spec::read_string(is, n, path, at);
  if (!s) return std::nullopt;
  std::string why;
  auto e = DimExpr::parse(*s, dims, &why);
  if (!e) is.add(mark_of(n, at), path, why);
  return e;
}

std::optional<ProblemFile> read_file(Issues& is, const YAML::Node& n, const std::string& path,
                                     const YAML::Mark& at) {
  auto s = spec::read_string(is, n, path, at);
  if (!s) return std::nullopt;
  const YAML::Mark m = mark_of(n, at);
  const std::string rel = s->rfind("lib:", 0) == 0 ? s->substr(4) : *s;
  const bool dotdot = rel == ".." || rel.rfind("../", 0) == 0 || rel.find("/../") != std::string::npos ||
                      (rel.size() >= 3 && rel.compare(rel.size() - 3, 3, "/..") == 0);
  if (rel.empty() || rel[0] == '/' || dotdot) {
    is.add(m, path, "'" + *s + "' must be a path inside the problem's folder, or lib:PATH inside "
                    "kernels/ (no leading '/', no '..')");
    return std::nullopt;
  }
  return ProblemFile{*s, m.line + 1, m.column + 1, path};
}

void read_init(Issues& is, const YAML::Node& n, const std::string& path, const YAML::Mark& at,
               const std::vector<std::string>& dims, ProblemInit& init) {
  MapReader m(is, n, path, keys("inputs[].init"), at);
  if (!m.is_map() || !m.require("dist", "normal, uniform, int, group_ends or scale")) return;
  auto d = spec::read_enum(is, m.get("dist"), m.path("dist"), m.mark(), problem_vocab::dists());
  if (!d) return;
  init.dist = *d;
  // Which keys each distribution takes; any other is a mistake worth naming.
  static const std::map<std::string, std::vector<std::string>> takes = {
      {"normal", {"mean", "std", "block_amplitude", "row_scale", "row_offset", "neg_inf", "outliers", "step"}},
      {"uniform", {"min", "max", "block_amplitude", "row_scale", "row_offset", "neg_inf", "outliers", "step"}},
      {"int", {"min", "max", "sorted", "unique"}},
      {"group_ends", {"total"}},
      {"scale", {}}};
  const auto& ok = takes.at(init.dist);
  for (const auto& k : keys("inputs[].init")) {
    if (k == "dist" || !m.has(k) || std::find(ok.begin(), ok.end(), k) != ok.end()) continue;
    is.add(mark_of(m.get(k), m.mark()), m.path(k),
           "'" + k + "' does not apply to dist: " + init.dist +
               (ok.empty() ? " (it takes nothing else)" : " (it takes " + spec::join_words(ok) + ")"));
  }
  auto num = [&](const char* k, double lo, bool incl, double* out) {
    if (!m.has(k)) return;
    if (auto v = spec::read_number(is, m.get(k), m.path(k), m.mark(), lo, incl, kHuge)) *out = *v;
  };
  num("mean", -kHuge, true, &init.mean);
  num("std", 0, false, &init.std);
  if (init.dist == "int") {
    init.min = 0;
    init.max = 0;
    if (!m.require("min", "the smallest value, inclusive") ||
        !m.require("max", "the largest value, inclusive"))
      return;
  }
  num("min", -kHuge, true, &init.min);
  num("max", -kHuge, true, &init.max);
  if ((init.dist == "uniform" || init.dist == "int") &&
      (init.dist == "int" ? init.min > init.max : init.min >= init.max)) {
    is.add(mark_of(m.get("max"), m.mark()), m.path("max"),
           "max must be " + std::string(init.dist == "int" ? ">=" : ">") + " min");
  }
  if (init.dist == "int" && (init.min != std::floor(init.min) || init.max != std::floor(init.max)))
    is.add(m.mark(), m.path("min"), "dist: int takes whole-number bounds");
  if (m.has("sorted")) init.sorted = spec::read_bool(is, m.get("sorted"), m.path("sorted"), m.mark()).value_or(false);
  if (m.has("unique")) init.unique = spec::read_bool(is, m.get("unique"), m.path("unique"), m.mark()).value_or(false);
  if (init.dist == "group_ends") {
    if (m.require("total", "the last end: the number of rows the groups split, e.g. M"))
      init.total = read_expr(is, m.get("total"), m.path("total"), m.mark(), dims);
  }
  // [lo, hi] with lo <= hi, each within (lo_min, hi_max] (lo_min itself when inclusive).
  auto pair = [&](const char* k, double lo_min, bool inclusive, double hi_max,
                  std::optional<std::pair<double, double>>* out) {
    if (!m.has(k)) return;
    const YAML::Node b = m.get(k);
    const std::string p = m.path(k);
    if (!b.IsSequence() || b.size() != 2) {
      is.add(mark_of(b, m.mark()), p, "must be a list [lo, hi], not " + describe(b));
      return;
    }
    auto lo = spec::read_number(is, b[0], item(p, 0), mark_of(b, m.mark()), lo_min, inclusive, hi_max);
    auto hi = spec::read_number(is, b[1], item(p, 1), mark_of(b, m.mark()), lo_min, inclusive, hi_max);
    if (lo && hi && *lo > *hi) is.add(mark_of(b, m.mark()), p, "lo must be <= hi");
    if (lo && hi) *out = std::make_pair(*lo, *hi);
  };
  pair("block_amplitude", 0, false, kHuge, &init.block_amplitude);
  pair("row_scale", 0, false, kHuge, &init.row_scale);
  pair("row_offset", -kHuge, true, kHuge, &init.row_offset);
  pair("neg_inf", 0, true, 1, &init.neg_inf);
  if (m.has("step"))
    init.step = spec::read_number(is, m.get("step"), m.path("step"), m.mark(), 0, false, kHuge).value_or(0);
  if (m.has("outliers")) {
    MapReader o(is, m.get("outliers"), m.path("outliers"), keys("inputs[].init.outliers"), m.mark());
    if (o.is_map() && o.require("columns", "how many columns hold the outliers (1 to 16), or which: [5, 37]") &&
        o.require("min", "the outliers' smallest magnitude") && o.require("max", "their largest magnitude")) {
      ProblemInit::Outliers out;
      std::optional<std::int64_t> cols;
      const YAML::Node c = o.get("columns");
      if (c.IsSequence()) {
        if (c.size() < 1 || c.size() > 16)
          is.add(mark_of(c, o.mark()), o.path("columns"), "list 1 to 16 columns, not " + std::to_string(c.size()));
        for (std::size_t k = 0; k < c.size(); ++k) {
          auto v = spec::read_int(is, c[k], item(o.path("columns"), k), mark_of(c, o.mark()), 0, kMaxInt);
          if (!v) continue;
          if (std::find(out.at.begin(), out.at.end(), *v) != out.at.end())
            is.add(mark_of(c[k], o.mark()), item(o.path("columns"), k), "column " + std::to_string(*v) + " appears twice");
          out.at.push_back(*v);
        }
        if (c.size() >= 1 && c.size() <= 16) cols = static_cast<std::int64_t>(c.size());
      } else {
        cols = spec::read_int(is, c, o.path("columns"), o.mark(), 1, 16);
      }
      auto lo = spec::read_number(is, o.get("min"), o.path("min"), o.mark(), 0, true, kHuge);
      auto hi = spec::read_number(is, o.get("max"), o.path("max"), o.mark(), 0, true, kHuge);
      if (lo && hi && *lo > *hi) is.add(mark_of(o.get("max"), o.mark()), o.path("max"), "max must be >= min");
      if (cols && lo && hi) {
        out.columns = static_cast<int>(*cols);
        out.min = *lo;
        out.max = *hi;
        init.outliers = out;
      }
    }
  }
}

void read_scaled_by(Issues& is, const YAML::Node& n, const std::string& path, const YAML::Mark& at,
                    ProblemTensor& t) {
  MapReader m(is, n, path, keys("inputs[].scaled_by"), at);
  if (!m.is_map()) return;
  ProblemScaledBy s;
  if (m.has("tensor") == m.has("scalar")) {
    is.add(m.mark(), path, "give either tensor: (block scales, with block:) or scalar: (one scale "
                           "for the tensor), not " + std::string(m.has("tensor") ? "both" : "neither"));
    return;
  }
  if (m.has("scalar")) {
    if (auto v = spec::read_string(is, m.get("scalar"), m.path("scalar"), m.mark())) s.scalar = *v;
    if (m.has("block"))
      is.add(mark_of(m.get("block"), m.mark()), m.path("block"), "block: goes with tensor:, not scalar:");
  } else {
    if (auto v = spec::read_string(is, m.get("tensor"), m.path("tensor"), m.mark())) s.tensor = *v;
    if (!m.require("block", "the block each scale covers, one edge per dimension, e.g. [1, 128]"))
      return;
    const YAML::Node b = m.get("block");
    if (!expect_list(is, b, m.path("block"), m.mark(), "[1, 128]")) return;
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (auto v = spec::read_int(is, b[i], item(m.path("block"), i), mark_of(b, m.mark()), 1, kMaxInt))
        s.block.push_back(*v);
    }
  }
  t.scaled_by = s;
}

void read_check(Issues& is, const YAML::Node& n, const std::string& path, const YAML::Mark& at,
                ProblemCheck& c) {
  MapReader m(is, n, path, keys("outputs[].check"), at);
  if (!m.is_map() || !m.require("kind", "tolerance, exact or topk")) return;
  auto k = spec::read_enum(is, m.get("kind"), m.path("kind"), m.mark(), problem_vocab::check_kinds());
  if (!k) return;
  c.kind = *k;
  static const std::map<std::string, std::vector<std::string>> takes = {
      {"tolerance", {"atol", "rtol", "max_abs", "rel_l2"}}, {"exact", {}}, {"topk", {"of", "largest"}}};
  const auto& ok = takes.at(c.kind);
  for (const auto& key : keys("outputs[].check")) {
    if (key == "kind" || !m.has(key) || std::find(ok.begin(), ok.end(), key) != ok.end()) continue;
    is.add(mark_of(m.get(key), m.mark()), m.path(key),
           "'" + key + "' does not apply to kind: " + c.kind +
               (ok.empty() ? "" : " (it takes " + spec::join_words(ok) + ")"));
  }
  for (const auto& [key, out] : {std::pair<const char*, double*>{"atol", &c.atol}, {"rtol", &c.rtol},
                                 {"max_abs", &c.max_abs}, {"rel_l2", &c.rel_l2}}) {
    if (c.kind == "tolerance" && m.has(key))
      *out = spec::read_number(is, m.get(key), m.path(key), m.mark(), 0, true, 1e6).value_or(-1);
  }
  if (c.kind == "tolerance") {
    if (c.atol < 0 && c.rtol < 0 && c.max_abs < 0 && c.rel_l2 < 0 &&
        !m.has("atol") && !m.has("rtol") && !m.has("max_abs") && !m.has("rel_l2"))
      is.add(m.mark(), path, "kind: tolerance needs at least one of atol (with rtol), max_abs, rel_l2");
    if (m.has("atol") != m.has("rtol"))
      is.add(m.mark(), m.path(m.has("atol") ? "rtol" : "atol"),
             "atol and rtol go together (|x - r| <= atol + rtol * |r|)");
  }
  if (c.kind == "topk") {
    if (m.require("of", "the input whose rows are searched"))
      c.of = spec::read_string(is, m.get("of"), m.path("of"), m.mark()).value_or("");
    if (m.has("largest"))
      c.largest = spec::read_bool(is, m.get("largest"), m.path("largest"), m.mark()).value_or(true);
  }
}

void read_lazy(Issues& is, const YAML::Node& n, const std::string& path, const YAML::Mark& at,
               std::vector<ProblemLazy>& out) {
  if (!expect_list(is, n, path, at, "[zeros, {copy: x}]")) return;
  if (n.size() == 0)
    is.add(mark_of(n, at), path, "list at least one do-nothing output (zeros, mean, {copy: INPUT}, iota)");
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string p = item(path, i);
    if (n[i].IsMap()) {
      MapReader m(is, n[i], p, keys("outputs[].lazy[]"), mark_of(n, at));
      if (!m.is_map() || !m.require("copy", "the input a lazy kernel would copy")) continue;
      if (auto s = spec::read_string(is, m.get("copy"), m.path("copy"), m.mark()))
        out.push_back({"copy", *s});
      continue;
    }
    std::vector<std::string> words = {"zeros", "mean", "iota"};
    auto k = spec::read_enum(is, n[i], p, mark_of(n, at), words);
    if (k) out.push_back({*k, ""});
  }
}

void read_tensor(Issues& is, const YAML::Node& n, const std::string& path, const YAML::Mark& at,
                 bool output, const std::vector<std::string>& dims, ProblemTensor& t) {
  MapReader m(is, n, path, keys(output ? "outputs[]" : "inputs[]"), at);
  t.line = m.mark().line + 1;
  t.column = m.mark().column + 1;
  if (!m.is_map()) return;
  if (m.require("name", "the tensor's name, e.g. x")) {
    t.name = spec::read_string(is, m.get("name"), m.path("name"), m.mark()).value_or("");
    if (!t.name.empty() && !is_identifier(t.name))
      is.add(mark_of(m.get("name"), m.mark()), m.path("name"),
             "'" + t.name + "' must be a C identifier (letters, digits, _)");
  }
  if (output && m.has("in_place_of")) {
    t.in_place_of = spec::read_string(is, m.get("in_place_of"), m.path("in_place_of"), m.mark()).value_or("");
    for (const char* k : {"dtype", "shape", "layout"}) {
      if (m.has(k))
        is.add(mark_of(m.get(k), m.mark()), m.path(k),
               std::string("an output in place of an input takes the input's ") + k + "; remove it");
    }
  } else {
    if (m.require("dtype", spec::join_words(problem_vocab::dtypes()).c_str()))
      t.dtype = spec::read_enum(is, m.get("dtype"), m.path("dtype"), m.mark(), problem_vocab::dtypes()).value_or("");
    if (m.require("shape", "a list of dimension expressions, e.g. [T, H]")) {
      const YAML::Node s = m.get("shape");
      if (expect_list(is, s, m.path("shape"), m.mark(), "[T, H]")) {
        if (s.size() > 6) is.add(mark_of(s, m.mark()), m.path("shape"), "has rank " +
                                 std::to_string(s.size()) + "; at most 6 (KFLEET_PROBLEM_MAX_RANK)");
        for (std::size_t i = 0; i < s.size(); ++i) {
          if (auto e = read_expr(is, s[i], item(m.path("shape"), i), mark_of(s, m.mark()), dims))
            t.shape.push_back(*e);
        }
      }
    }
    if (m.has("layout"))
      t.layout = spec::read_enum(is, m.get("layout"), m.path("layout"), m.mark(), problem_vocab::layouts()).value_or("");
  }
  if (m.has("doc")) t.doc = spec::read_string(is, m.get("doc"), m.path("doc"), m.mark()).value_or("");
  if (!output) {
    if (m.require("init", "how its values are drawn, e.g. {dist: normal, std: 1}"))
      read_init(is, m.get("init"), m.path("init"), m.mark(), dims, t.init);
    if (m.has("scaled_by")) read_scaled_by(is, m.get("scaled_by"), m.path("scaled_by"), m.mark(), t);
    return;
  }
  if (m.require("check", "what the output must satisfy, e.g. {kind: tolerance, atol: 0.01, rtol: 0.01}"))
    read_check(is, m.get("check"), m.path("check"), m.mark(), t.check);
  if (m.require("lazy", "the do-nothing outputs the check must reject, e.g. [zeros, mean]"))
    read_lazy(is, m.get("lazy"), m.path("lazy"), m.mark(), t.lazy);
}

void read_case(Issues& is, const YAML::Node& n, const std::string& path, const YAML::Mark& at,
               const ProblemDef& def, ProblemCase& c) {
  MapReader m(is, n, path, keys("cases[]"), at);
  c.line = m.mark().line + 1;
  if (!m.is_map()) return;
  if (m.require("name", "the case's name, e.g. small"))
    c.name = spec::read_string(is, m.get("name"), m.path("name"), m.mark()).value_or("");
  if (m.require("dims", "a value for every dimension, e.g. {T: 4, H: 64}")) {
    MapReader d(is, m.get("dims"), m.path("dims"), def.dims, m.mark());
    if (d.is_map()) {
      for (const auto& name : def.dims) {
        if (!d.has(name)) {
          is.add(d.mark(), d.path(name), "missing a value for dimension " + name);
          continue;
        }
        if (auto v = spec::read_int(is, d.get(name), d.path(name), d.mark(), 1, kMaxInt)) c.dims[name] = *v;
      }
    }
  }
  if (m.has("scalars")) {
    std::vector<std::string> names;
    for (const auto& s : def.scalars) names.push_back(s.name);
    MapReader s(is, m.get("scalars"), m.path("scalars"), names, m.mark());
    for (const auto& name : names) {
      if (!s.is_map() || !s.has(name)) continue;
      if (auto v = spec::read_number(is, s.get(name), s.path(name), s.mark(), -kHuge, true, kHuge))
        c.scalars[name] = *v;
    }
  }
  if (m.has("required"))
    c.required = spec::read_bool(is, m.get("required"), m.path("required"), m.mark()).value_or(false);
  if (m.has("doc")) c.doc = spec::read_string(is, m.get("doc"), m.path("doc"), m.mark()).value_or("");
  if (m.has("init")) {
    // The case's own draw of some inputs: {x: {dist: normal, ...}}, each a whole init.
    std::vector<std::string> names;
    for (const auto& t : def.inputs) names.push_back(t.name);
    MapReader r(is, m.get("init"), m.path("init"), names, m.mark());
    for (const auto& name : names) {
      if (!r.is_map() || !r.has(name)) continue;
      ProblemInit init;
      read_init(is, r.get(name), r.path(name), r.mark(), def.dims, init);
      c.init[name] = std::move(init);
    }
  }
  if (m.has("check")) {
    // The case's own tolerance bounds of some outputs: {d: {atol: 0.03}}, each replacing the
    // output's bound of that name (problem_check.cpp: only for kind tolerance).
    std::vector<std::string> names;
    for (const auto& t : def.outputs) names.push_back(t.name);
    MapReader r(is, m.get("check"), m.path("check"), names, m.mark());
    static const std::vector<std::string> bounds = {"atol", "rtol", "max_abs", "rel_l2", "dot_rtol"};
    for (const auto& name : names) {
      if (!r.is_map() || !r.has(name)) continue;
      MapReader b(is, r.get(name), r.path(name), bounds, r.mark());
      if (!b.is_map()) continue;
      ProblemCheck chk;
      chk.kind = "tolerance";
      for (const auto& [key, out] : {std::pair<const char*, double*>{"atol", &chk.atol}, {"rtol", &chk.rtol},
                                     {"max_abs", &chk.max_abs}, {"rel_l2", &chk.rel_l2},
                                     {"dot_rtol", &chk.dot_rtol}})
        if (b.has(key)) *out = spec::read_number(is, b.get(key), b.path(key), b.mark(), 0, true, 1e6).value_or(-1);
      if (!b.has("atol") && !b.has("rtol") && !b.has("max_abs") && !b.has("rel_l2") && !b.has("dot_rtol"))
        is.add(b.mark(), r.path(name), "a case's check sets at least one of atol, rtol, max_abs, rel_l2, dot_rtol");
      c.check[name] = chk;
    }
  }
}

}  // namespace

std::string ProblemParse::error_text() const {
  std::string out;
  for (const auto& i : issues) out += i.to_string() + "\n";
  return out;
}

ProblemParse parse_problem(const std::string& yaml_text, const std::string& file) {
  Issues is;
  is.file = file;
  ProblemParse out;
  const auto loaded = spec::load_document(is, yaml_text);
  if (!loaded) {
    out.issues = std::move(is.list);
    return out;
  }
  const YAML::Node& root = *loaded;
  ProblemDef def;
  def.file = file;
  try {
    const YAML::Mark top{};
    MapReader m(is, root, "", keys(""), top);
    if (m.is_map()) {
      if (m.require("problem", "the problem's name, e.g. rmsnorm")) {
        def.name = spec::read_string(is, m.get("problem"), "problem", m.mark()).value_or("");
        static const std::regex re("[a-z][a-z0-9_]*");
        if (!def.name.empty() && (!std::regex_match(def.name, re) || def.name.size() > 31))
          is.add(mark_of(m.get("problem"), m.mark()), "problem",
                 "'" + def.name + "' must be lower-case letters, digits and _, at most 31 characters");
      }
      if (m.require("version", "a whole number >= 1; raise it when the contract changes"))
        def.version = static_cast<int>(spec::read_int(is, m.get("version"), "version", m.mark(), 1, 1'000'000).value_or(0));
      if (m.has("summary")) def.summary = spec::read_string(is, m.get("summary"), "summary", m.mark()).value_or("");
      if (m.has("abi")) def.abi = spec::read_enum(is, m.get("abi"), "abi", m.mark(), problem_vocab::abis()).value_or("");
      if (m.require("dims", "the named dimensions, e.g. [T, H]") &&
          expect_list(is, m.get("dims"), "dims", m.mark(), "[T, H]")) {
        const YAML::Node d = m.get("dims");
        for (std::size_t i = 0; i < d.size(); ++i) {
          auto s = spec::read_string(is, d[i], item("dims", i), mark_of(d, m.mark()));
          if (!s) continue;
          if (!is_identifier(*s) || *s == "cdiv" || *s == "min" || *s == "max")
            is.add(mark_of(d[i], m.mark()), item("dims", i), "'" + *s + "' must be an identifier (not cdiv, min, max)");
          else if (std::find(def.dims.begin(), def.dims.end(), *s) != def.dims.end())
            is.add(mark_of(d[i], m.mark()), item("dims", i), "dimension " + *s + " appears twice");
          else def.dims.push_back(*s);
        }
        if (def.dims.size() > 16)
          is.add(mark_of(d, m.mark()), "dims", "has " + std::to_string(def.dims.size()) +
                 " dimensions; at most 16 (KFLEET_PROBLEM_MAX_DIMS)");
      }
      if (m.has("scalars") && expect_list(is, m.get("scalars"), "scalars", m.mark(), "[{name: eps, dtype: fp32, value: 1.0e-6}]")) {
        const YAML::Node s = m.get("scalars");
        for (std::size_t i = 0; i < s.size(); ++i) {
          MapReader r(is, s[i], item("scalars", i), keys("scalars[]"), mark_of(s, m.mark()));
          if (!r.is_map()) continue;
          ProblemScalar sc;
          if (r.require("name", "e.g. eps")) sc.name = spec::read_string(is, r.get("name"), r.path("name"), r.mark()).value_or("");
          if (r.require("dtype", "fp32, fp64, int32 or int64"))
            sc.dtype = spec::read_enum(is, r.get("dtype"), r.path("dtype"), r.mark(), problem_vocab::scalar_dtypes()).value_or("");
          if (r.has("value")) sc.value = spec::read_number(is, r.get("value"), r.path("value"), r.mark(), -kHuge, true, kHuge);
          if (r.has("doc")) sc.doc = spec::read_string(is, r.get("doc"), r.path("doc"), r.mark()).value_or("");
          def.scalars.push_back(sc);
        }
      }
      for (const bool output : {false, true}) {
        const char* k = output ? "outputs" : "inputs";
        if (!m.require(k, output ? "the tensors the kernel writes" : "the tensors the kernel reads") ||
            !expect_list(is, m.get(k), k, m.mark(), "[{name: x, dtype: bf16, shape: [T, H], ...}]"))
          continue;
        const YAML::Node l = m.get(k);
        for (std::size_t i = 0; i < l.size(); ++i) {
          ProblemTensor t;
          read_tensor(is, l[i], item(k, i), mark_of(l, m.mark()), output, def.dims, t);
          (output ? def.outputs : def.inputs).push_back(std::move(t));
        }
      }
      for (const auto& [k, slot] : {std::pair<const char*, std::optional<DimExpr>*>{"workspace", &def.workspace},
                                    {"flops", &def.flops}, {"bytes", &def.bytes}}) {
        if (std::string(k) != "workspace" &&
            !m.require(k, std::string(k) == "flops" ? "the work, e.g. 2*M*N*K" : "the minimum traffic in bytes"))
          continue;
        if (m.has(k)) *slot = read_expr(is, m.get(k), k, m.mark(), def.dims);
      }
      if (m.require("cases", "named shape sets, e.g. [{name: small, dims: {T: 4, H: 64}}]") &&
          expect_list(is, m.get("cases"), "cases", m.mark(), "[{name: small, dims: {T: 4}}]")) {
        const YAML::Node l = m.get("cases");
        if (l.size() == 0) is.add(mark_of(l, m.mark()), "cases", "needs at least one case");
        for (std::size_t i = 0; i < l.size(); ++i) {
          ProblemCase c;
          read_case(is, l[i], item("cases", i), mark_of(l, m.mark()), def, c);
          def.cases.push_back(std::move(c));
        }
      }
      if (m.require("reference", "the trusted reference's files, e.g. {cpu: reference.cpp}")) {
        MapReader r(is, m.get("reference"), "reference", keys("reference"), m.mark());
        if (r.is_map() && r.require("cpu", "the CPU reference CI checks, e.g. reference.cpp")) {
          for (const auto& k : keys("reference")) {
            if (!r.has(k)) continue;
            if (auto f = read_file(is, r.get(k), r.path(k), r.mark())) def.reference[k] = *f;
          }
        }
      }
      if (m.has("kernels") && expect_list(is, m.get("kernels"), "kernels", m.mark(), "[{name: naive, source: naive.cu, languages: [cuda]}]")) {
        const YAML::Node l = m.get("kernels");
        for (std::size_t i = 0; i < l.size(); ++i) {
          MapReader r(is, l[i], item("kernels", i), keys("kernels[]"), mark_of(l, m.mark()));
          if (!r.is_map()) continue;
          ProblemKernel k;
          if (r.require("name", "e.g. naive")) k.name = spec::read_string(is, r.get("name"), r.path("name"), r.mark()).value_or("");
          if (r.require("source", "the kernel's file, e.g. naive.cu"))
            if (auto f = read_file(is, r.get("source"), r.path("source"), r.mark())) k.source = *f;
          if (r.require("languages", "[cuda], [hip] or [cuda, hip]")) {
            if (auto l2 = spec::read_string_list(is, r.get("languages"), r.path("languages"), r.mark())) {
              for (std::size_t j = 0; j < l2->size(); ++j) {
                if (std::find(problem_vocab::languages().begin(), problem_vocab::languages().end(), (*l2)[j]) ==
                    problem_vocab::languages().end())
                  is.add(mark_of(r.get("languages"), r.mark()), item(r.path("languages"), j),
                         "'" + (*l2)[j] + "' is not one of: cuda, hip");
                else k.languages.push_back((*l2)[j]);
              }
            }
          }
          def.kernels.push_back(std::move(k));
        }
      }
      if (is.list.empty()) problem_detail::check_problem(is, root, def);
    }
  } catch (const YAML::Exception& e) {
    is.add(e.mark, "(document)", "cannot read the document: " + e.msg);
  }
  out.issues = std::move(is.list);
  if (out.issues.empty()) out.def = std::move(def);
  return out;
}

}  // namespace kfleet
