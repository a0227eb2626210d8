#include "case_spec.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace kfleet::problems {
namespace {

std::string num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

bool plain_word(const std::string& s) {
  return !s.empty() && s.find_first_of(" \t\r\n=") == std::string::npos;
}

std::string pair(const std::pair<double, double>& p) { return num(p.first) + "," + num(p.second); }

// DIST key=value... of an init line (PROBLEM-ABI.md, "The problem spec").
std::string init_words(const ProblemInit& i) {
  std::ostringstream o;
  o << i.dist;
  if (i.dist == "normal") o << " mean=" << num(i.mean) << " std=" << num(i.std);
  else if (i.dist == "uniform") o << " min=" << num(i.min) << " max=" << num(i.max);
  else if (i.dist == "int")
    o << " min=" << num(i.min) << " max=" << num(i.max) << " sorted=" << (i.sorted ? 1 : 0)
      << " unique=" << (i.unique ? 1 : 0);
  if (i.row_scale) o << " row_scale=" << pair(*i.row_scale);
  if (i.row_offset) o << " row_offset=" << pair(*i.row_offset);
  if (i.neg_inf) o << " neg_inf=" << pair(*i.neg_inf);
  if (i.outliers) {
    o << " outliers=" << i.outliers->columns << ',' << num(i.outliers->min) << ',' << num(i.outliers->max);
    if (!i.outliers->at.empty()) {
      o << " at=";
      for (std::size_t k = 0; k < i.outliers->at.size(); ++k) o << (k ? "," : "") << i.outliers->at[k];
    }
  }
  if (i.step > 0) o << " step=" << num(i.step);
  return o.str();
}

}  // namespace

Result<std::string> problem_spec_text(const ProblemDef& def) {
  auto fail = [&](const std::string& why) {
    return make_error(Errc::invalid_argument, def.name + ": " + why);
  };
  if (def.abi != "generic")
    return fail("uses the family ABI " + def.abi + ": its kernels go through the family harness, not a problem spec");
  std::ostringstream o;
  o << "kfleet-problem-spec 2\n";
  o << "problem " << def.name << ' ' << def.version << '\n';
  o << "dims";
  for (const auto& d : def.dims) o << ' ' << d;
  o << '\n';
  for (const auto& s : def.scalars) o << "scalar " << s.name << ' ' << s.dtype << '\n';
  const auto slots = def.abi_slots();
  for (const auto& s : slots) {
    if (!plain_word(s.tensor->name)) return fail("tensor name '" + s.tensor->name + "' is not one word");
    o << "tensor " << s.tensor->name << ' ' << s.role << ' ' << s.tensor->dtype << '\n';
  }
  for (const auto& in : def.inputs) {
    const ProblemInit& i = in.init;
    o << "init " << in.name << ' ' << init_words(i) << '\n';
    if (in.scaled_by) {
      if (!in.scaled_by->scalar.empty()) {
        o << "scaled_by " << in.name << " scalar=" << in.scaled_by->scalar << '\n';
      } else {
        o << "scaled_by " << in.name << " tensor=" << in.scaled_by->tensor << " block=";
        for (std::size_t b = 0; b < in.scaled_by->block.size(); ++b) o << (b ? "," : "") << in.scaled_by->block[b];
        o << '\n';
      }
    }
    if (i.block_amplitude) o << "amplitude " << in.name << ' ' << num(i.block_amplitude->first) << ' ' << num(i.block_amplitude->second) << '\n';
  }
  for (const auto& out : def.outputs) {
    if (!plain_word(out.name)) return fail("output name '" + out.name + "' is not one word");
    o << "output " << out.name << ' ' << (out.in_place_of.empty() ? out.name : out.in_place_of) << '\n';
    const ProblemCheck& c = out.check;
    o << "check " << out.name << ' ' << c.kind;
    if (c.kind == "tolerance") {
      if (c.atol >= 0) o << " atol=" << num(c.atol) << " rtol=" << num(c.rtol >= 0 ? c.rtol : 0);
      if (c.max_abs >= 0) o << " max_abs=" << num(c.max_abs);
      if (c.rel_l2 >= 0) o << " rel_l2=" << num(c.rel_l2);
    } else if (c.kind == "topk") {
      o << " of=" << c.of << " largest=" << (c.largest ? 1 : 0);
    }
    o << '\n';
    for (const auto& l : out.lazy) {
      o << "lazy " << out.name << ' ' << l.kind;
      if (l.kind == "copy") o << ' ' << l.input;
      o << '\n';
    }
  }
  for (const auto& c : def.cases) {
    if (!plain_word(c.name)) return fail("case name '" + c.name + "' is not one word");
    o << "case " << c.name << '\n';
    o << "case_dims " << c.name;
    for (const auto& d : def.dims) {
      const auto it = c.dims.find(d);
      if (it == c.dims.end()) return fail("case " + c.name + " has no value of " + d);
      o << ' ' << it->second;
    }
    o << '\n';
    o << "case_scalars " << c.name;
    for (const auto& s : def.scalars) {
      const double v = def.scalar_value(s, c);
      o << ' ' << (std::isnan(v) ? std::string("-") : num(v));
    }
    o << '\n';
    for (const auto& s : slots) {
      auto shape = def.shape_of(*s.tensor, c);
      if (!shape) return fail("case " + c.name + ": " + shape.error().message);
      o << "case_shape " << c.name << ' ' << s.tensor->name;
      for (auto v : *shape) o << ' ' << v;
      o << '\n';
    }
    for (const auto& [name, i] : c.init) {
      o << "case_init " << c.name << ' ' << name << ' ' << init_words(i);
      if (i.block_amplitude) o << " amplitude=" << pair(*i.block_amplitude);
      o << '\n';
    }
    for (const auto& in : def.inputs) {
      const ProblemInit& init = def.init_of(in, c);
      if (init.dist != "group_ends") continue;
      auto total = init.total->eval(c.dims);
      if (!total) return fail("case " + c.name + ": " + total.error().message);
      o << "case_total " << c.name << ' ' << in.name << ' ' << *total << '\n';
    }
    auto eval = [&](const std::optional<DimExpr>& e) -> Result<std::int64_t> {
      if (!e) return std::int64_t{0};
      return e->eval(c.dims);
    };
    auto flops = eval(def.flops), bytes = eval(def.bytes), ws = eval(def.workspace);
    if (!flops) return fail("case " + c.name + ": flops: " + flops.error().message);
    if (!bytes) return fail("case " + c.name + ": bytes: " + bytes.error().message);
    if (!ws) return fail("case " + c.name + ": workspace: " + ws.error().message);
    o << "case_cost " << c.name << ' ' << *flops << ' ' << *bytes << ' ' << *ws << '\n';
  }
  o << "end\n";
  return o.str();
}

}  // namespace kfleet::problems
