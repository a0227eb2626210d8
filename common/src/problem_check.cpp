// What the fields of a problem.yaml mean together: names that refer to each other, dtypes that
// fit their distributions and checks, and every case's shapes evaluated (so a case that makes a
// scale tensor the wrong size, or a negative dimension, fails here and not on a GPU).
#include <algorithm>
#include <set>

#include "problem_internal.hpp"
#include "spec_keys.hpp"

namespace kfleet::problem_detail {
namespace {

using spec::child;
using spec::item;
using spec::mark_of;

bool is_int(const std::string& dtype) { return dtype == "int32" || dtype == "int64"; }

struct Where {
  const YAML::Node& root;
  // The node at list[i] (and optionally a key under it), for its position.
  YAML::Mark at(const char* list, std::size_t i, const char* key = nullptr) const {
    const YAML::Mark top = mark_of(root, YAML::Mark{});
    const YAML::Node l = root[list];
    if (!l.IsDefined() || !l.IsSequence() || i >= l.size()) return mark_of(l, top);
    const YAML::Node n = l[i];
    if (!key) return mark_of(n, top);
    return n.IsMap() && n[key].IsDefined() ? mark_of(n[key], mark_of(n, top)) : mark_of(n, top);
  }
  YAML::Mark top(const char* key) const {
    const YAML::Mark t = mark_of(root, YAML::Mark{});
    return mark_of(root[key], t);
  }
};

void check_names(spec::Issues& is, const Where& w, ProblemDef& d) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < d.inputs.size(); ++i) {
    if (!seen.insert(d.inputs[i].name).second)
      is.add(w.at("inputs", i, "name"), child(item("inputs", i), "name"), "input " + d.inputs[i].name + " appears twice");
  }
  std::set<std::string> outs, in_place;
  for (std::size_t i = 0; i < d.outputs.size(); ++i) {
    auto& o = d.outputs[i];
    const std::string p = item("outputs", i);
    if (!outs.insert(o.name).second)
      is.add(w.at("outputs", i, "name"), child(p, "name"), "output " + o.name + " appears twice");
    if (!o.in_place_of.empty()) {
      const ProblemTensor* in = d.input(o.in_place_of);
      if (!in) {
        is.add(w.at("outputs", i, "in_place_of"), child(p, "in_place_of"), "'" + o.in_place_of + "' is not an input");
        continue;
      }
      if (!in_place.insert(o.in_place_of).second)
        is.add(w.at("outputs", i, "in_place_of"), child(p, "in_place_of"), "two outputs are written in place of " + o.in_place_of);
      o.dtype = in->dtype;
      o.shape = in->shape;
      o.layout = in->layout;
      if (o.name != o.in_place_of && d.input(o.name))
        is.add(w.at("outputs", i, "name"), child(p, "name"), "output " + o.name + " has an input's name; an output takes an input's name only when written in place of it");
    } else if (d.input(o.name)) {
      is.add(w.at("outputs", i, "name"), child(p, "name"), "output " + o.name + " has an input's name; write in_place_of: " + o.name + " if it overwrites that input");
    }
  }
  std::set<std::string> scalars;
  for (std::size_t i = 0; i < d.scalars.size(); ++i) {
    if (!scalars.insert(d.scalars[i].name).second)
      is.add(w.at("scalars", i, "name"), child(item("scalars", i), "name"), "scalar " + d.scalars[i].name + " appears twice");
  }
  if (d.scalars.size() > 8)
    is.add(w.top("scalars"), "scalars", "has " + std::to_string(d.scalars.size()) + " scalars; at most 8 (KFLEET_PROBLEM_MAX_SCALARS)");
  if (d.abi_slots().size() > 12)
    is.add(w.top("outputs"), "outputs", "the inputs and outputs take " + std::to_string(d.abi_slots().size()) +
           " tensor slots; at most 12 (KFLEET_PROBLEM_MAX_TENSORS)");
  std::set<std::string> cases, kernels;
  for (std::size_t i = 0; i < d.cases.size(); ++i) {
    if (!cases.insert(d.cases[i].name).second)
      is.add(w.at("cases", i, "name"), child(item("cases", i), "name"), "case " + d.cases[i].name + " appears twice");
  }
  for (std::size_t i = 0; i < d.kernels.size(); ++i) {
    if (!kernels.insert(d.kernels[i].name).second)
      is.add(w.at("kernels", i, "name"), child(item("kernels", i), "name"), "kernel " + d.kernels[i].name + " appears twice");
  }
}

// What an input's draw (its own, or a case's) must fit: its dtype, its rank, its scales.
void check_init(spec::Issues& is, const YAML::Mark& at, const std::string& p, const ProblemTensor& t,
                const ProblemInit& init) {
  const std::string& dist = init.dist;
  const bool int_dist = dist == "int" || dist == "group_ends";
  if (int_dist != is_int(t.dtype))
    is.add(at, child(p, "dist"),
           "dist: " + dist + " does not fit dtype " + t.dtype + (int_dist ? " (it draws integers: int32 or int64)" : " (an integer tensor takes dist: int or group_ends)"));
  if (dist == "group_ends" && t.shape.size() != 1)
    is.add(at, child(p, "dist"), "dist: group_ends makes one list of ends: rank 1");
  if (init.block_amplitude && !(t.scaled_by && !t.scaled_by->tensor.empty()))
    is.add(at, child(p, "block_amplitude"), "block_amplitude needs scaled_by: {tensor: ..., block: ...}");
  if (init.neg_inf && t.dtype != "fp16" && t.dtype != "bf16" && t.dtype != "fp32")
    is.add(at, child(p, "neg_inf"), "-inf is a value of fp16, bf16 and fp32 only; " + t.name + " is " + t.dtype);
}

void check_inputs(spec::Issues& is, const Where& w, ProblemDef& d) {
  std::map<std::string, int> scale_users;  // scale tensor -> how many tensors it scales
  for (std::size_t i = 0; i < d.inputs.size(); ++i) {
    const auto& t = d.inputs[i];
    const std::string p = item("inputs", i);
    const std::string& dist = t.init.dist;
    check_init(is, w.at("inputs", i, "init"), child(p, "init"), t, t.init);
    if (dist == "scale" && t.dtype != "fp32")
      is.add(w.at("inputs", i, "dtype"), child(p, "dtype"), "a scale tensor is fp32");
    if (t.dtype == "fp8_e4m3" && !t.scaled_by)
      is.add(w.at("inputs", i), child(p, "scaled_by"), "an fp8 input needs scaled_by: (its dequantisation scales)");
    if (t.scaled_by && t.dtype != "fp8_e4m3")
      is.add(w.at("inputs", i, "scaled_by"), child(p, "scaled_by"), "scaled_by is for fp8 inputs; " + t.name + " is " + t.dtype);
    if (!t.scaled_by) continue;
    const auto& s = *t.scaled_by;
    if (!s.tensor.empty()) {
      const ProblemTensor* st = d.input(s.tensor);
      if (!st || st->init.dist != "scale")
        is.add(w.at("inputs", i, "scaled_by"), child(p, "scaled_by.tensor"),
               "'" + s.tensor + "' must be an fp32 input with init: {dist: scale}");
      else ++scale_users[s.tensor];
      if (s.block.size() != t.shape.size())
        is.add(w.at("inputs", i, "scaled_by"), child(p, "scaled_by.block"),
               "has " + std::to_string(s.block.size()) + " edges; " + t.name + " has rank " + std::to_string(t.shape.size()));
    } else {
      auto sc = std::find_if(d.scalars.begin(), d.scalars.end(), [&](const ProblemScalar& x) { return x.name == s.scalar; });
      if (sc == d.scalars.end() || (sc->dtype != "fp32" && sc->dtype != "fp64") || sc->value)
        is.add(w.at("inputs", i, "scaled_by"), child(p, "scaled_by.scalar"),
               "'" + s.scalar + "' must be an fp32 scalar with no value (the quantiser sets it)");
    }
  }
  for (std::size_t i = 0; i < d.inputs.size(); ++i) {
    if (d.inputs[i].init.dist == "scale" && scale_users[d.inputs[i].name] != 1)
      is.add(w.at("inputs", i, "init"), child(item("inputs", i), "init.dist"),
             "a scale tensor is the scaled_by.tensor of exactly one fp8 input; " + d.inputs[i].name + " is of " +
                 std::to_string(scale_users[d.inputs[i].name]));
  }
  for (std::size_t i = 0; i < d.scalars.size(); ++i) {
    const auto& s = d.scalars[i];
    const bool scale = std::any_of(d.inputs.begin(), d.inputs.end(), [&](const ProblemTensor& t) {
      return t.scaled_by && t.scaled_by->scalar == s.name;
    });
    if (!s.value && !scale)
      is.add(w.at("scalars", i), child(item("scalars", i), "value"), "missing required field 'value' (the scalar's value; only a scale that an fp8 input is scaled_by goes without)");
  }
}

void check_outputs(spec::Issues& is, const Where& w, const ProblemDef& d) {
  for (std::size_t i = 0; i < d.outputs.size(); ++i) {
    const auto& o = d.outputs[i];
    const std::string p = item("outputs", i);
    if (o.dtype == "fp8_e4m3")
      is.add(w.at("outputs", i, "dtype"), child(p, "dtype"), "fp8 outputs are not supported yet (the check would need their scale)");
    if (o.check.kind == "tolerance" && is_int(o.dtype))
      is.add(w.at("outputs", i, "check"), child(p, "check.kind"), "an integer output is checked with kind: exact or topk, not tolerance");
    if (o.check.kind == "topk") {
      const ProblemTensor* of = d.input(o.check.of);
      if (!is_int(o.dtype))
        is.add(w.at("outputs", i, "check"), child(p, "check.kind"), "kind: topk checks an output of indices (int32 or int64)");
      if (!of)
        is.add(w.at("outputs", i, "check"), child(p, "check.of"), "'" + o.check.of + "' is not an input");
      else if (of->shape.size() != o.shape.size() || of->shape.empty())
        is.add(w.at("outputs", i, "check"), child(p, "check.of"), o.check.of + " and " + o.name + " must have the same rank (rows of " + o.check.of + ", k indices each)");
    }
    for (std::size_t j = 0; j < o.lazy.size(); ++j) {
      const auto& l = o.lazy[j];
      const std::string lp = item(child(p, "lazy"), j);
      if (l.kind == "copy" && !d.input(l.input))
        is.add(w.at("outputs", i, "lazy"), lp, "'" + l.input + "' is not an input");
      if (l.kind == "iota" && !is_int(o.dtype))
        is.add(w.at("outputs", i, "lazy"), lp, "iota (0, 1, 2, ... along each row) is for integer outputs");
      if (l.kind == "mean" && is_int(o.dtype))
        is.add(w.at("outputs", i, "lazy"), lp, "mean is for floating-point outputs");
    }
  }
}

void check_cases(spec::Issues& is, const Where& w, const ProblemDef& d) {
  for (std::size_t ci = 0; ci < d.cases.size(); ++ci) {
    const auto& c = d.cases[ci];
    if (c.dims.size() != d.dims.size()) continue;  // already reported
    const YAML::Mark at = w.at("cases", ci);
    const std::string p = item("cases", ci);
    auto fail = [&](const std::string& why) { is.add(at, p, "case " + c.name + ": " + why); };
    for (const auto& [name, bounds] : c.check) {
      const ProblemTensor* o = d.output(name);
      if (!o) continue;  // the parser named it
      if (d.abi == "generic")
        fail("check." + name + ": a case's own bounds are for the families (abi: attention or scaled_mm) "
             "so far; a generic problem's spec has one check per output");
      else if (o->check.kind != "tolerance")
        fail("check." + name + ": only an output checked with kind: tolerance takes a case's bounds (" + name +
             " is checked with kind: " + o->check.kind + ")");
      else if (const ProblemCheck m = d.check_of(*o, c); m.atol < 0 && m.rtol >= 0)
        fail("check." + name + ": rtol without atol (|x - r| <= atol + rtol * |r|)");
      else if (bounds.dot_rtol >= 0 && d.abi != "scaled_mm")
        fail("check." + name + ": dot_rtol is for the scaled_mm family (a sum of products, whose "
             "sums of |terms| the harness computes); abi " + d.abi + " has no such sums");
      else if (bounds.dot_rtol >= 0 && m.atol < 0)
        fail("check." + name + ": dot_rtol widens allclose (|x - r| <= atol + rtol * |r| + "
             "dot_rtol * sum |terms|), which needs the output's atol and rtol");
    }
    std::map<std::string, std::vector<std::int64_t>> shapes;
    for (const auto* list : {&d.inputs, &d.outputs}) {
      for (const auto& t : *list) {
        auto s = d.shape_of(t, c);
        if (!s) { fail(t.name + ": " + s.error().message); continue; }
        for (auto v : *s) {
          if (v < 1) { fail(t.name + " has a dimension of " + std::to_string(v) + "; every dimension must be >= 1"); break; }
        }
        shapes[t.name] = *s;
      }
    }
    for (const auto& [k, e] : {std::pair<const char*, const std::optional<DimExpr>*>{"workspace", &d.workspace}, {"flops", &d.flops}, {"bytes", &d.bytes}}) {
      if (!*e) continue;
      auto v = (*e)->eval(c.dims);
      if (!v) fail(std::string(k) + ": " + v.error().message);
      else if (*v < 0) fail(std::string(k) + " is " + std::to_string(*v) + "; it must be >= 0");
    }
    for (const auto& [name, init] : c.init) {
      const ProblemTensor* t = d.input(name);
      const std::string ip = child(child(p, "init"), name);
      if (t->init.dist == "scale" || init.dist == "scale")
        is.add(at, ip, "a scale tensor is written by the fp8 input it scales; a case cannot draw it");
      else
        check_init(is, at, ip, *t, init);
    }
    for (const auto& t : d.inputs) {
      const ProblemInit& init = d.init_of(t, c);
      if (init.total) {
        auto v = init.total->eval(c.dims);
        if (!v) fail(t.name + ".init.total: " + v.error().message);
      }
      if (init.dist == "int" && init.unique && shapes.count(t.name) && !shapes[t.name].empty() &&
          init.max - init.min + 1 < static_cast<double>(shapes[t.name].back()))
        fail(t.name + ": unique values in [" + std::to_string(static_cast<long long>(init.min)) + ", " +
             std::to_string(static_cast<long long>(init.max)) + "] cannot fill a row of " + std::to_string(shapes[t.name].back()));
      if (init.outliers && shapes.count(t.name) && !shapes[t.name].empty()) {
        const std::int64_t row = shapes[t.name].back();
        if (init.outliers->columns > row)
          fail(t.name + ": " + std::to_string(init.outliers->columns) + " outlier columns in rows of " + std::to_string(row));
        for (auto col : init.outliers->at)
          if (col >= row) fail(t.name + ": outlier column " + std::to_string(col) + " is past its rows of " + std::to_string(row));
      }
      if (!t.scaled_by || t.scaled_by->tensor.empty() || !shapes.count(t.name) || !shapes.count(t.scaled_by->tensor)) continue;
      const auto& s = shapes[t.name];
      const auto& b = t.scaled_by->block;
      if (b.size() != s.size()) continue;
      std::vector<std::int64_t> want;
      for (std::size_t k = 0; k < s.size(); ++k) want.push_back((s[k] + b[k] - 1) / b[k]);
      if (shapes[t.scaled_by->tensor] != want) {
        std::string ws;
        for (auto v : want) ws += (ws.empty() ? "" : ", ") + std::to_string(v);
        fail(t.scaled_by->tensor + " must have shape [" + ws + "] (one scale per block of " + t.name + ")");
      }
    }
    for (const auto& o : d.outputs) {
      for (const auto& l : o.lazy) {
        if (l.kind == "copy" && shapes.count(l.input) && shapes.count(o.name) && shapes[l.input] != shapes[o.name])
          fail("lazy copy of " + l.input + " into " + o.name + ": the shapes differ");
      }
      if (o.check.kind == "topk" && shapes.count(o.check.of) && shapes.count(o.name)) {
        const auto& a = shapes[o.check.of];
        const auto& b = shapes[o.name];
        if (a.size() == b.size() && !a.empty() &&
            (!std::equal(a.begin(), a.end() - 1, b.begin()) || b.back() > a.back()))
          fail(o.name + " must have " + o.check.of + "'s rows and at most its row length");
      }
    }
  }
}

}  // namespace

void check_problem(spec::Issues& is, const YAML::Node& root, ProblemDef& def) {
  const Where w{root};
  check_names(is, w, def);
  check_inputs(is, w, def);
  check_outputs(is, w, def);
  if (is.list.empty()) check_cases(is, w, def);
}

}  // namespace kfleet::problem_detail
